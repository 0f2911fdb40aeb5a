"""Issue 12: the English context rules, the lexicons and the challenge set.

One (text, expected) table per rule family; each row lists every span of the
family's labels that the built-in rules (standalone, merged) return. Negative
rows are the look-alikes that must not match: pain scores, blood pressures,
vent settings, times, clinical words that are also names.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from deid_core.corpus import read_jsonl
from deid_core.engine.lexicons import AMBIGUOUS, COMMON, NAME, STOP, UNKNOWN, load_lexicon
from deid_core.engine.merge import merge_spans
from deid_core.engine.postprocess import apply_filters, load_filters
from deid_core.engine.rules import RuleSet, load_rules
from deid_core.engine.tokenize import tokenize
from deid_core.errors import UnsupportedFormat
from deid_core.evaluation.visible_chars import recall_per_category, visible_char_prf
from deid_core.spans import Document, Span

CHALLENGE = Path(__file__).parent / "fixtures" / "english_challenge.jsonl"
CHALLENGE_2 = Path(__file__).parent / "fixtures" / "english_challenge_2.jsonl"
CHALLENGE_3 = Path(__file__).parent / "fixtures" / "english_challenge_3.jsonl"
CHALLENGE_4 = Path(__file__).parent / "fixtures" / "english_challenge_4.jsonl"
NAMES = {"DOCTOR", "PATIENT"}
PLACES = {"HOSPITAL", "CITY", "STATE", "STREET"}


@pytest.fixture(scope="module")
def rules() -> RuleSet:
    return load_rules("en")


def found(rules: RuleSet, text: str, labels: set[str]) -> list[tuple[str, str]]:
    spans = merge_spans(rules.find(text, standalone_only=True))
    return [(text[s.start : s.end], s.label) for s in spans if s.label in labels]


TITLES = [
    ("spoke with dr.smith re: plan", [("smith", "DOCTOR")]),
    ("Seen by Dr. Young today", [("Young", "DOCTOR")]),  # ambiguous name, strong cue
    ("DR JONES AWARE", [("JONES", "DOCTOR")]),
    ("Dr. Henry Nakamura attending", [("Henry Nakamura", "DOCTOR")]),
    ("ICU team (Drs. Feld and Ibarra) here", [("Feld", "DOCTOR"), ("Ibarra", "DOCTOR")]),
    ("mrs. hall resting comfortably", [("hall", "PATIENT")]),
    ("MR. DEVANEY HAS WIFE", [("DEVANEY", "PATIENT")]),
    ("For my take on Mrs Baker, see", [("Baker", "PATIENT")]),
    ("ms. delacroix alert", [("delacroix", "PATIENT")]),
    # not names: a stop word after the title, MS the disease, MR the murmur
    ("dr. aware of low uop", []),
    ("hx of MS flare, on ms contin", []),
    ("Echo: mild MR. Compared with prior", []),
    ("md notified, no new orders", []),
]

CREDENTIALS_AND_ROLES = [
    ("J. Whitcomb RN", [("J. Whitcomb", "DOCTOR")]),
    ("Allison Brandt, MD", [("Allison Brandt", "DOCTOR")]),
    ("--Beth Ann Mulcahy, RN 6/3", [("Beth Ann Mulcahy", "DOCTOR")]),
    ("follow\nm. reyes msw", [("m. reyes", "DOCTOR")]),
    ("T. OKONKWO RN", [("T. OKONKWO", "DOCTOR")]),
    ("Results called to R. Hutchins, PA.", [("R. Hutchins", "DOCTOR")]),
    ("RN Chloe called for report", [("Chloe", "DOCTOR")]),
    ("sw ana to see in am", [("ana", "DOCTOR")]),
    ("CM Lorraine working on it", [("Lorraine", "DOCTOR")]),
    ("Chaplain Rev. Obi visited", [("Obi", "DOCTOR")]),
    ("Ingrid Solheim, CRNA  pgr", [("Ingrid Solheim", "DOCTOR")]),
    ("Surgeon: Raghunathan. Assist: Pell.", [("Raghunathan", "DOCTOR"), ("Pell", "DOCTOR")]),
    ("SCRUB RN: GALLAGHER", [("GALLAGHER", "DOCTOR")]),
    ("Assist: none. Anesthesia: general ETT", []),
    # a credential glued to a word is not a signature; a role word is not a name
    ("Deborah Klein, LICSW x4-7721", [("Deborah Klein", "DOCTOR")]),
    ("Ordering MD: Lee", []),
    ("pt seen by covering MD", []),
]

CONTACTS = [
    ("paged covering md, repaged smith at 1530", [("smith", "DOCTOR")]),
    ("per Hall, hold heparin", [("Hall", "DOCTOR")]),  # ambiguous, capitalised in a mixed-case line
    ("per brown, hold heparin", []),  # ambiguous and lower case: not enough
    ("Spoke with Hope from CCA", [("Hope", "DOCTOR")]),
    ("SEEN BY NGUYEN THIS AM", [("NGUYEN", "DOCTOR")]),
    ("discussed with will tomorrow", []),
    ("called pharmacy, spoke with team", []),
    ("Rapid response called Saturday evening", []),
    ("pt to go home by Thursday", []),
    ("per protocol, by mouth", []),
]

KIN = [
    ("wife Linda at bedside", [("Linda", "PATIENT")]),
    ("daughter karen called, she is hcp", [("karen", "PATIENT")]),
    ("WIFE MAUREEN AND SON KEVIN VISITED", [("MAUREEN", "PATIENT"), ("KEVIN", "PATIENT")]),
    ("HCP (sister Anahit) aware", [("Anahit", "PATIENT")]),
    ("Married (wife Yolanda), 3 children", [("Yolanda", "PATIENT")]),
    ("niece Patricia Walsh is HCP", [("Patricia Walsh", "PATIENT")]),
    ("Jane Doe (daughter) 617-555-2222", [("Jane Doe", "PATIENT")]),
    ("son is HCP, wife at bedside", []),
    ("daughter in law visiting", []),
    ("WIFE MAY VISIT LATER", []),  # "May" in capitals is not a name
]

FACILITIES_AND_PLACES = [
    ("Discharged to Spaulding Rehab on", [("Spaulding Rehab", "HOSPITAL")]),
    ("dc'd to braintree rehab today", [("braintree rehab", "HOSPITAL")]),
    ("pt from Sunnyvale Manor nursing home", [("Sunnyvale Manor nursing home", "HOSPITAL")]),
    ("PT TRANSFERRED FROM ST. ELIZABETH'S ON", [("ST. ELIZABETH'S", "HOSPITAL")]),
    ("CM called VNA of Boston intake", [("VNA of Boston", "HOSPITAL")]),
    ("records from Lahey Clinic.", [("Lahey Clinic", "HOSPITAL")]),
    ("Rec: Harborview Acute Rehab vs home", [("Harborview Acute Rehab", "HOSPITAL")]),
    ("Active w/ Cape Ann Elder Services.", [("Cape Ann Elder Services", "HOSPITAL")]),
    ("lives in quincy with wife", [("quincy", "CITY")]),
    ("lives alone in Revere and", [("Revere", "CITY")]),
    ("Son lives in Tampa, FL.", [("Tampa", "CITY"), ("FL", "STATE")]),
    ("Confirmed pt address 14 Alcott St.", [("14 Alcott St.", "STREET")]),
    # departments, generic care settings, section headers
    ("followed in Heart Failure Clinic", []),
    ("needs acute rehab vs home", []),
    ("outpatient clinic next week", []),
    ("Transthoracic echocardiogram  Hospital Course: uneventful", []),
    ("lives in a 2nd floor apt", []),
    ("R. Hutchins, PA", []),
]

DATES = [
    ("foley changed on 3/4 and 3/6", [("3/4", "DATE"), ("3/6", "DATE")]),
    ("breast CA dx 5/09, DVT '12", [("5/09", "DATE"), ("12", "DATE")]),
    ("PMH: CABG '98, MI 95, appy 1987.", [("98", "DATE"), ("95", "DATE"), ("1987", "DATE")]),
    ("PSH: R TKR 2015. Last colonoscopy", [("2015", "DATE")]),
    ("Former smoker, quit 1988. Moved here 2018", [("1988", "DATE"), ("2018", "DATE")]),
    ("Next cardiology appt MARCH 3RD", [("MARCH 3RD", "DATE")]),
    ("last admission december 2nd", [("december 2nd", "DATE")]),
    ("seen june 14 in clinic", [("june 14", "DATE")]),
    # look-alikes: pain scores, pressures, vent settings, times, ICD codes, doses
    ("pain 7/10 at incision, strength 4/5", []),
    ("BP 120/80, MAP 65, BP 90/50", []),
    ("ps 10/5 fio2 40%, peep 5, CPAP 12/5, vent settings AC 500/14/5", []),
    ("will wean by 2000, recheck until 2100", []),
    ("Hypertension (ICD-10 I10.", []),
    ("may 2 units of insulin", []),
    ("dec 2 mg", []),
]

PHONES = [
    ("pager 12345", [("12345", "PHONE")]),
    ("paged resident pg 41873 no new orders", [("41873", "PHONE")]),
    ("covering md pager #66214 re bp", [("66214", "PHONE")]),
    ("call 617 555-1234 ext 4567", [("617 555-1234 ext 4567", "PHONE")]),
    ("updated by phone (508)5550198", [("(508)5550198", "PHONE")]),
    ("son cell 617 - 555 - 0175, home 617.555 0176", [("617 - 555 - 0175", "PHONE"), ("617.555 0176", "PHONE")]),
    ("friend 781 5550129", [("781 5550129", "PHONE")]),
    ("contact floor team at ext 6-4412", [("6-4412", "PHONE")]),
    ("Klein, LICSW x4-7721", [("4-7721", "PHONE")]),
    # reference and order numbers are not pagers
    ("called pharmacy re: prior auth, ref # 88812", []),
    ("room #12345", []),
    ("given 50000 units", []),
]

# Issue 12, second round: the rules added for challenge set 2's misses, each with look-alikes.
ORGS = {"HOSPITAL", "ORGANIZATION", "CITY", "STATE"}
ROUND2_NAMES = [
    # kinship words in capitals or lower case: a word in no list counts; plural kinship words, lists
    ("SON DMITRI AND DAUGHTER OKSANA VISITED", [("DMITRI", "PATIENT"), ("OKSANA", "PATIENT")]),
    ("daughter funmi updated by phone", [("funmi", "PATIENT")]),
    ("Daughter tearful at bedside", []),
    ("SON AT BEDSIDE, WIFE UPDATED", []),
    ("2 sons (Hector and Ramon) out of state", [("Hector", "PATIENT"), ("Ramon", "PATIENT")]),
    ("stepfather Gus visited", [("Gus", "PATIENT")]),
    ("wife Linda and the team met", [("Linda", "PATIENT")]),
    ("dtr Bernadette (Bernie) updated", [("Bernadette", "PATIENT"), ("Bernie", "PATIENT")]),
    ("wife Rosa (HCP) at bedside", [("Rosa", "PATIENT")]),
    # a name before a notification verb, never a service
    ("uop 20cc/hr, Mbeki notified.", [("Mbeki", "DOCTOR")]),
    ("Ortho notified. Renal aware. Resident paged. Family informed.", []),
    ("MD aware of low uop", []),
    # a service or a role, then a name in parentheses
    ("NEPHRO (KRISHNAMURTHY) FOLLOWING", [("KRISHNAMURTHY", "DOCTOR")]),
    ("Spoke with admissions (Colleen) re bed", [("Colleen", "DOCTOR")]),
    ("GI (EGD today) and pulm (PFTs) following", []),
    # a role, a colon and a name alone on its line
    ("Pt turned.\nRN: Siobhan Kearney\n", [("Siobhan Kearney", "DOCTOR")]),
    ("SW: Met with pt and wife.", []),
    ("RN: pt resting\n", []),
    # a credential after a name: a signature is strong, words mid-sentence are not
    ("PT SEEN BY WOUND CARE RN, RECS IN CHART.", []),
    ("controlled rx, needs md signature.", []),
    ("(Agawam). NH RN Tracey gave report", [("Tracey", "DOCTOR")]),
    ("resting.\nKearney RN\n", [("Kearney", "DOCTOR")]),
    # new contact cues
    ("Home O2 through Apria, contact Dwayne 800-555-0147", [("Dwayne", "DOCTOR")]),
    ("rec'd call from kendra at the pharmacy", [("kendra", "DOCTOR")]),
    ("contact precautions for MRSA", []),
]
ROUND2_PLACES = [
    ("Pt worked 30 yrs at General Dynamics, retired", [("General Dynamics", "ORGANIZATION")]),
    ("WORKED AS BUS DRIVER FOR PVTA.", [("PVTA", "ORGANIZATION")]),
    ("worked at home, retired from the post office", []),
    ("Home O2 ordered through Lincare, delivery am", [("Lincare", "ORGANIZATION")]),
    ("ordered through pharmacy; received from ED", []),
    ("will f/u w kindred liaison", [("kindred", "HOSPITAL")]),
    ("will call the liaison; rehab liaison aware", []),
    ("Beaumont accepted, bed for Monday.", [("Beaumont", "HOSPITAL")]),
    ("Pt accepted. ABG pending. Insurance pending. Family declined.", []),
    (
        "referrals sent to Marlborough Hills, Life Care Center of Nashoba and Beaumont.",
        [("Marlborough Hills", "HOSPITAL"), ("Life Care Center of Nashoba", "HOSPITAL"), ("Beaumont", "HOSPITAL")],
    ),
    ("Transferred from BIDMC ED.", [("BIDMC", "HOSPITAL")]),
    ("Discharge to: Hillcrest Rehab, Pittsfield, MA.", [("Hillcrest Rehab", "HOSPITAL"), ("Pittsfield", "CITY"), ("MA", "STATE")]),
    ("Results called to R. Hutchins, PA.", []),
    ("Pt from a nursing home (Agawam).", [("Agawam", "CITY")]),
    ("St. Vincent's (Worcester) records", [("St. Vincent's", "HOSPITAL"), ("Worcester", "CITY")]),
    ("Pain (Mobile) and BP (stable)", []),
    ("she prefers an area rehab near home", []),
    ("seen at Wellesley Cardiology Associates", [("Wellesley Cardiology Associates", "HOSPITAL")]),
    ("seen at Cardiology Associates and the Heart Failure Clinic", []),
]
ROUND2_DATES = [
    ("NO ETOH, QUIT TOBACCO 2001.", [("2001", "DATE")]),
    ("quit smoking in 1995, retired from teaching 2009", [("1995", "DATE"), ("2009", "DATE")]),
    ("quit smoking 20 years ago, 2 ppd", []),
]
# Fourth round (issue 13, session 7), from challenge set 4's misses; none of these strings is from that set.
ROUND4_NAMES = [
    ("Met with case worker Annelise at the shelter", [("Annelise", "DOCTOR")]),
    ("pt's caseworker Thaddeus Obi called", [("Thaddeus Obi", "DOCTOR")]),
    ("Hebrew Rehab liaison Marguerite to screen", [("Marguerite", "DOCTOR")]),
    ("rabbi chaim adler visited", [("chaim adler", "DOCTOR")]),
    ("handed off to Ekaterina (SICU resident) at 1900", [("Ekaterina", "DOCTOR")]),
    ("d/w Haruto Sato (RN), agrees", [("Haruto Sato", "DOCTOR")]),
    ("Anesthesia: MAC (Dr. Vandersloot).", [("Vandersloot", "DOCTOR")]),
    ("RT: Temitope (pgr 41220)", [("Temitope", "DOCTOR")]),
    ("Swallow eval done.\nR. Okonjo, MS, CCC-SLP", [("R. Okonjo", "DOCTOR")]),
    # not names: a role alone, a language after an interpreter, a patient before a role
    ("pt (MICU resident aware) stable; Cardiology (fellow) aware", []),
    ("Spanish interpreter used; interpreter Portuguese at bedside", []),
    ("liaison to call back; aide assisted w/ bath", []),
]
ROUND4_PLACES = [
    ("Ins Tufts Health Plan, verified", [("Tufts Health Plan", "ORGANIZATION")]),
    ("Insurance: Harvard Pilgrim   Member ID: 55680", [("Harvard Pilgrim", "ORGANIZATION")]),
    ("INS: BCBS RI", [("BCBS RI", "ORGANIZATION")]),
    ("Insurance pending. ins: none. Insurance: Medicare A/B", []),
    ("Rx called to Walgreens on Elm St in Revere",
     [("Walgreens", "ORGANIZATION"), ("Elm St", "STREET"), ("Revere", "CITY")]),  # round 8: known_org
    ("turned on Dr Smith's request; on Lasix gtt", []),
    ("CABG 2014 at Lahey Clinic; R TKA 3/2019 at Emerson", [("Lahey Clinic", "HOSPITAL"), ("Emerson", "HOSPITAL")]),
    ("ambulating since 2015 at home with a cane", []),
    ("BCx pending, Cx pending, UA pending", []),
    ("pcp dr ibsen at fenway health aware of plan", [("fenway health", "HOSPITAL")]),
    ("Pt follows at Dana Farber for chemo", [("Dana Farber", "HOSPITAL")]),
    # a match the validator rejects ("LTACH and Oak Hill Healthcare") no longer hides the valid one inside it
    ("referred for LTACH and Oak Hill Healthcare as backup", [("Oak Hill Healthcare", "HOSPITAL")]),
    ("seen at home by VNA; followed at clinic q3mo; seen at Cardiology Associates", []),
    ("Rx at Walgreens Pharmacy; prior stay at Good Samaritan Deaconess", [
        ("Walgreens Pharmacy", "HOSPITAL"), ("Good Samaritan Deaconess", "HOSPITAL")]),
]
ROUND4_DATES = [
    ("Wt 61 kg, down from 66 kg on 9/28.", [("9/28", "DATE")]),
    ("Pain 6/10 since 11/2, BP 130/70 on arrival", [("11/2", "DATE")]),
    ("pain down from 8/10 to 4/10", []),
]
# Fifth round (issue 13, session 7), from challenge set 5's misses; none of these strings is from that set.
ROUND5_NAMES = [
    ("0300: pt Vanterpool resting, MAP 65", [("Vanterpool", "PATIENT")]),
    ("Patient Oksana Hrytsenko, MRN 4471", [("Oksana Hrytsenko", "PATIENT")]),
    ("pt alert, pt Spanish-speaking, Pt is Catholic, patient refused", []),
    ("Recs as above.\nM. Abernathy-Cole / cards fellow", [("M. Abernathy-Cole", "DOCTOR")]),
    ("turned q2h.\n-jt", [("jt", "DOCTOR")]),
    ("Will follow.  r.t. rn", [("r.t.", "DOCTOR")]),
    ("KM/RN", [("KM", "DOCTOR")]),
    ("RT: Obiageli   pager 41873", [("Obiageli", "DOCTOR")]),
    ("Consults:\n- PT\n- SW\n- EGD\n- no", []),
]
ROUND5_PLACES = [
    ("lives at 31 hawthorn terrace w/ dtr", [("31 hawthorn terrace", "STREET")]),
    # a unit after the street is inside the rule's window; a street never crosses a line;
    # "CT" in capitals and "ct" in lower case are scans
    ("home on 604 Quarry Circle Apt. 12 with", [("604 Quarry Circle Apt. 12", "STREET")]),
    ("SISTER AT 77 DORSET TERRACE SUITE 4, DANVERS", [("77 DORSET TERRACE SUITE 4", "STREET")]),
    ("2 RECOMMEND FOLLOW-UP CT IN 3 MONTHS; 1 recommend follow-up ct", []),
    ("Address 12 Harbor\nMILTON CT 06460", []),
    # a clinician's credential is no state, a month no place, a surname before "hospital" no city
    ("Jo Morris, MD; placed in August 2020; records from gonzalez hospital", [("gonzalez hospital", "HOSPITAL")]),
    ("Lives: 9 Elm Street, Lynn, Mass., 2nd fl", [("9 Elm Street", "STREET"), ("Mass.", "STATE")]),
    ("plan: rehab, eg Whitcomb Manor; rehab vs home", [("Whitcomb Manor", "HOSPITAL")]),
    ("Home O2 3L via Lincare; O2 via NC", [("Lincare", "ORGANIZATION")]),
    ("Advised ED eval at Heywood tonight. eval at bedside", [("Heywood", "HOSPITAL")]),
]
ROUND5_AGES = [
    ("Pt is 101. Mother turned 94 in May.", [("101", "AGE"), ("94", "AGE")]),
    ("sat is 96%. T is 98.6. HR is 99, pt is 45", []),
]
# Sixth round (issue 13, session 7), from challenge set 6's misses; none of these strings is from that set.
ROUND6_NAMES = [
    ('pt Orrin Tate, goes by "Skip". lives alone', [("Orrin Tate", "PATIENT"), ("Skip", "PATIENT")]),
    ("note done.\n-- rj okafor pgy1 #40213", [("rj okafor", "DOCTOR")]),
    ("D. Lindgren, PGY-2", [("D. Lindgren", "DOCTOR")]),
    ("plan per resident\n- attending aware", []),
    ("RADIOLOGY REPORT\n\npt DORSEY, LYNN   MRN", [("DORSEY, LYNN", "PATIENT")]),
    ("recommended home PT Creatinine 1.2; seen by Ana Cruz, PT. No concerns", [("Ana Cruz", "DOCTOR")]),
]
ROUND6_PLACES = [
    ("pt methodist, church is Grace Chapel in Lexington.", [("Grace Chapel", "ORGANIZATION"), ("Lexington", "CITY")]),
    ("f/u Lahey 3 wks. f/u labs 2 wks, f/u PCP 1 wk, f/u cards in 2 wks, follow up with Ana Ruiz in 2 wks", [("Lahey", "HOSPITAL")]),
    ("bib Armstrong from home; bib EMS; bib daughter", [("Armstrong", "ORGANIZATION")]),
    ("from Maplewood Terrace (assisted living), found down", [("Maplewood Terrace", "HOSPITAL")]),
    ("STAY APPROVED BY HARVARD PILGRIM THRU 6/2", [("HARVARD PILGRIM", "ORGANIZATION")]),
    ("INS: BCBS OF RI", [("BCBS OF RI", "ORGANIZATION")]),
    ("was hospitalized at Quarry Hill Regional Medical Center in 2019", [("Quarry Hill Regional Medical Center", "HOSPITAL")]),
    ("d/c to Maple Nursing and Rehab, Fairhaven, MA.", [("Maple Nursing and Rehab", "HOSPITAL"), ("Fairhaven", "CITY"), ("MA", "STATE")]),
]
ROUND6_DATES = [
    ("homeless since feb, sober since Sept.", [("feb", "DATE"), ("Sept", "DATE")]),
    ("no visitors since may, until may 2 units", []),
]
# Seventh round (issue 13, session 7), from challenge set 7's misses; none of these strings is from that set.
ROUND7 = [
    ('spoke w/ wife Eleanor ("Nell") re: goals', [("Eleanor", "PATIENT"), ("Nell", "PATIENT")]),
    ('c/o pain ("sharp"), rates it ("Worst")', []),
    ("ID fellow Dr. Ostrowski pgr 3371.", [("Ostrowski", "DOCTOR"), ("3371", "PHONE")]),
    ("room #4412, bed 2; p 4419 noted", []),
    ("auth sent 14-Nov, decision due 21-NOV", [("14-Nov", "DATE"), ("21-NOV", "DATE")]),
    ("pt dc'd 11/30.", [("11/30", "DATE")]),
    ("home cpap 10/5 via Lincare, to bring mask", [("Lincare", "ORGANIZATION")]),
]
# Eighth round (issue 13, session 8), written from challenge set 8's misses, judged on sets 9 and 10.
ROUND8 = [
    ("lives w/ roommate Priya. FOB Tavion at bedside. gdson Trevor called",
     [("Priya", "PATIENT"), ("Tavion", "PATIENT"), ("Trevor", "PATIENT")]),
    ("breastfeeding, LC Noreen saw pt. lactation consultant Ines to return", [("Noreen", "DOCTOR"), ("Ines", "DOCTOR")]),
    ("spoke w/ son Yakov.\nmcg RN CM\n", [("Yakov", "PATIENT"), ("mcg", "DOCTOR")]),
    ("goals of care.\nbea h. rn\n", [("bea h.", "DOCTOR")]),
    ("PT/OT eval today\nRN CM\n", []),
    ("pt Dembele, Aminata, 58F", [("Dembele, Aminata", "PATIENT")]),
    ("pt Smith, tired", [("Smith", "PATIENT")]),  # the cue's own name rule; "tired" is no given name
    ("pt works nights at Amazon in Romulus", [("Amazon", "ORGANIZATION"), ("Romulus", "CITY")]),
    ("TC from Walgreens; wallet (w/ BCBS card); O2 via Apria", [
        ("Walgreens", "ORGANIZATION"), ("BCBS", "ORGANIZATION"), ("Apria", "ORGANIZATION")]),
    ("home meds verified w/ CVS. CVS: RRR. CVS exam nl", [("CVS", "ORGANIZATION")]),
    ("MICHIGAN STATE POLICE TROOPER HERE 1100", [("MICHIGAN STATE POLICE", "ORGANIZATION")]),
    ("Dispo: Heritage Pointe SNF. the SNF has a bed", [("Heritage Pointe", "HOSPITAL")]),
    ("readmit from LTACH (Select Specialty - Pontiac).", [("Select Specialty", "HOSPITAL")]),
    ("prev followed at Michigan Medicine nephrology.", [("Michigan Medicine", "HOSPITAL")]),
    ("f/u at Riverbend Transplant Institute next week", [("Riverbend Transplant Institute", "HOSPITAL")]),
    ("member id 100394857211. path accession S23-18840. case 2 of 3", [
        ("100394857211", "HEALTHPLAN"), ("S23-18840", "IDNUM")]),
    ("prior inpt stay 2021; dx'd 2016. adm 2015 from ED", [("2021", "DATE"), ("2016", "DATE")]),
]
# Ninth round (issue 13, session 8), written from challenge set 9's misses, judged on sets 10 and 11.
ROUND9 = [
    ("lives with wife at 4417 n pearl st. Insurance: Medicare + Cascadia Health Plan.", [
        ("4417 n pearl st.", "STREET"), ("Cascadia Health Plan", "ORGANIZATION")]),
    ("Pt lives at 2290 s. federal blvd apt 4c, Denver, CO.", [("2290 s. federal blvd apt 4c", "STREET"),
                                                               ("Denver", "CITY"), ("CO", "STATE")]),
    ("given 2 units prbc, 4 n saline bolus", []),
    ("pt asking for gf keisha, called her", [("keisha", "PATIENT")]),
    ("surgeon.\n-- k.o. rn pgr 2-6118\n", [("k.o.", "DOCTOR")]),
    ("Their pastor, Fr. Thibodeaux, will visit. FR 40%, father at bedside", [("Thibodeaux", "PATIENT")]),
    ("D/c to The Oaks at Hendersonville. d/c to home; transfer to floor when bed", [
        ("The Oaks at Hendersonville", "HOSPITAL")]),
    ("employer cascade roofing rep called for work comp", [("cascade roofing", "ORGANIZATION")]),
    ("flown in by Redwood Air Rescue. R femur", [("Redwood Air Rescue", "HOSPITAL")]),
    ("Pt is a teacher at Fort Collins High School; colleagues", [("Fort Collins High School", "ORGANIZATION")]),
    ("arrangements w/ pinecrest funeral home in lafayette.", [
        ("pinecrest funeral home", "HOSPITAL"), ("lafayette", "CITY")]),
]
# Towns after "from", "in", "to": a common first name after "from"/"to" is a person, and a town that
# starts an organisation's name is no town (the place_lexicon rules, judged as CITY only).
ROUND9_TOWNS = [
    ("pt from walla walla. brother arrives from tulsa thurs", [("walla walla", "CITY"), ("tulsa", "CITY")]),
    ("call from Dennis re: meds; report to Whitney at 1900; lives in Chelsea.", [("Chelsea", "CITY")]),
    ("records from davis labs; nurse from smith home care; d/c to union city assisted living", []),
]
# Tenth round (issue 13, session 8), written from challenge set 10's misses, judged on sets 11 and 12.
ROUND10 = [
    ("micu rn note 0700-1900. pt hallorann, 92 yo f adm from snf", [("hallorann", "PATIENT")]),
    ("SICU NSG NOTE. PT BRANDVOLD POD 1 S/P EX LAP", [("BRANDVOLD", "PATIENT")]),
    ("pt afebrile 2 days, pt 46m, pt is a 46m", []),
    ("per team.\nrt mk x4418\n", [("mk", "DOCTOR")]),
    ('DTR BERNADETTE ("BERNIE") DROVE IN. PAIN ("SHARP")', [("BERNADETTE", "PATIENT"), ("BERNIE", "PATIENT")]),
    ("poa is grandniece becky, updated", [("becky", "PATIENT")]),
    ("transfer from wasatch valley med ctr w/ ards", [("wasatch valley med ctr", "HOSPITAL")]),
    ("Stretcher transport by Calumet EMS at 1400. bib EMS, came by ambulance", [("Calumet EMS", "ORGANIZATION")]),
    ("delivered to home at 2207 bayshore dr, Tampa, FL.", [
        ("2207 bayshore dr", "STREET"), ("Tampa", "CITY"), ("FL", "STATE")]),
    ("Hx: prior bleed jan '18 on NSAIDs; cts fellow paged @ 6-4410", [("jan '18", "DATE"), ("6-4410", "PHONE")]),
]

# Eleventh round (session 9): challenge set 11's misses, and rules whose spans ended a word
# short of the gold name on the starter's corpus (so the model kept them as features only).
ROUND11 = [
    ("Mrs. Eudora Pinkney, ninety-four, Methodist.", [("Eudora Pinkney", "PATIENT"), ("ninety-four", "AGE")]),
    ("Pt is ninety-one y/o, lives alone", [("ninety-one", "AGE")]),
    ("waited ninety minutes in triage", []),
    ("sats ninety percent on 2L", []),
    ("girlfriend destiny called, # pending", [("destiny", "PATIENT")]),
    ("wife summer says transferred from home", [("summer", "PATIENT")]),
    ("DTR HOPE VISITED AT 1400", [("HOPE", "PATIENT")]),
    ("wife present at bedside", []),
    ("son at bedside all night", []),
    ("Son BUCK and dtr-in-law SHARLA visited", [("BUCK", "PATIENT"), ("SHARLA", "PATIENT")]),  # BUCK: session 17
    ("home with boston home infusion for abx", [("boston home infusion", "ORGANIZATION")]),
    ("from tuscaloosa by helicopter.\ndlw\n", [("tuscaloosa", "CITY"), ("dlw", "DOCTOR")]),
    ("pt sleeping, no distress.\nno\n", []),
    ("PT FROM SW MO, WIFE DECEASED.", [("MO", "STATE")]),
    ("lives in western PA with son", [("PA", "STATE")]),
    ("lives at 2207 n. sycamore st, las cruces. police here", [("las cruces", "CITY")]),
    ("pastor of Mt. Zion AME in town", [("Mt. Zion AME", "ORGANIZATION")]),
    ("member of Grace Lutheran Church", [("Grace Lutheran Church", "ORGANIZATION")]),
    ("raised Southern Baptist, now Methodist", []),
    ("outside records from wagner memorial hospital requested", [("wagner memorial hospital", "HOSPITAL")]),
    ("admitted to General Surgery", []),
    ("was living at west matthew nursing home prior", [("west matthew nursing home", "HOSPITAL")]),
    ("outside films from good samaritan hospital reviewed", [("good samaritan hospital", "HOSPITAL")]),
    ("pt to return to robertsdale healthcare center when stable", [("robertsdale healthcare center", "HOSPITAL")]),
    ("receives services from tucson home health services 3x/wk", [("tucson home health services", "ORGANIZATION")]),
    ("vna nurse called from wesley chapel home care", [("wesley chapel home care", "ORGANIZATION")]),
    ("needs acute rehab, eg Whitcomb Manor", [("Whitcomb Manor", "HOSPITAL")]),
    ("Clinical pharmacy note - vanc dosing", []),
    ("records from Garcia University Hospital obtained", [("Garcia University Hospital", "HOSPITAL")]),
]

# Session 14: a patient's surname opening a line before an age and sex, with no cue word
# (from sets 7, 13 and 14; the generator never writes it).
ROUND14 = [
    ("ccu rn note 1900-0700\npettibone, 71m, s/p stemi 11/18", [("pettibone", "PATIENT")]),
    ("TSICU nursing\nMarchetti, Dominic 34M MCC vs car", [("Marchetti, Dominic", "PATIENT")]),
    ("SICU NSG NOTE\nOKAFOR, 67F POD 1", [("OKAFOR", "PATIENT")]),
    ("Foley 16F placed, draining", []),
    ("Pt, 71m, resting", []),
    ("hx, 45f w/ copd", []),
    # a home people live in, named with a plain word where case says nothing
    ("92 YO M BIBA FROM SUNRISE SENIOR LIVING AFTER A FALL", [("SUNRISE SENIOR LIVING", "HOSPITAL")]),
    ("pt accepted at Cedar Crest Health & Rehab for short-term rehab", [
        ("Cedar Crest Health & Rehab", "HOSPITAL")]),
    ("wife wants him back at his previous nursing home", []),
    ("d/c to facility Hicks Nursing and Rehab", [("Hicks Nursing and Rehab", "HOSPITAL")]),
    ("WOUND CARE CENTER TO FOLLOW", []),
    # and a home-care agency named with a plain word
    ("pt to go home w/ beacon hospice, first visit sat", [("beacon hospice", "ORGANIZATION")]),
    ("PT TO GO HOME WITH BEACON HOSPICE", [("BEACON HOSPICE", "ORGANIZATION")]),
    ("services through zuniga home care", [("zuniga home care", "ORGANIZATION")]),
    ("residential hospice referral; referral to inpatient hospice", []),
]

# Session 15: from challenge set 15 (ICU nursing notes): newborns named "Baby boy <surname>",
# relatives after "sibling" and "ex-husband", record abbreviations that are no name, abbreviated
# facility words, "Visiting Nurse Assoc. of ...", the hospital after "ED at", a state's postal code
# after "lives in" and numbered roads.
ROUND15 = [
    ("Baby boy Okonkwo, DOL 12, CGA 33 1/7 wks", [("Okonkwo", "PATIENT")]),
    ('baby girl delacroix ("lulu"), twin B, 29 wk', [("delacroix", "PATIENT"), ("lulu", "PATIENT")]),
    ("baby boy born at 0300, baby girl is feeding well", []),
    ("Sibling Aaliyah (6yo) at grandma's", [("Aaliyah", "PATIENT")]),
    ("pt's ex-husband walt called, is NOT hcp", [("walt", "PATIENT")]),
    ("93 yo per daughter, dob on face sheet wrong", []),
    ("PCP: Dr. Ostrowski, Bowdoin St Health Ctr.", [("Ostrowski", "DOCTOR"), ("Bowdoin St Health Ctr", "HOSPITAL")]),
    ("PCP DR. MACINTYRE AT FALMOUTH FAM MED TO SEE IN 1 WK", [
        ("MACINTYRE", "DOCTOR"), ("FALMOUTH FAM MED", "HOSPITAL")]),
    ("VNA: VISITING NURSE ASSOC OF CAPE COD , START OF CARE 11/20", [("VISITING NURSE ASSOC OF CAPE COD", "HOSPITAL")]),
    ("Advised to go to ED at Mercy or call 911.", [("Mercy", "HOSPITAL")]),
    ("seen in ED at bedside by team", []),
    ("hcp is sister (lives in nh), # 603-555-0172", [("nh", "STATE")]),
    ("pt lives in ME with wife", [("ME", "STATE")]),
    ("she lives in or near town", []),
    # session 19: a country is no city (the hand-written sets leave it unmarked, the generator says COUNTRY)
    ("was born in Jamaica & moved to La Palma in 2005", [("La Palma", "CITY")]),
    # set 16: the second relative after "AND" in capitals; University of X Hospital in capitals;
    # the facility after "visit w/ Dr. X at"; a hospital before its ED; a home-infusion company
    ("DAUGHTERS IMANI AND KEISHA VISITED", [("IMANI", "PATIENT"), ("KEISHA", "PATIENT")]),
    ("TO: UNIVERSITY OF UTAH HOSPITAL BURN UNIT", [("UNIVERSITY OF UTAH HOSPITAL", "HOSPITAL")]),
    ("Pt wants tubal at 6 wk visit w/ Dr. Adeyemi at Tufts.", [("Adeyemi", "DOCTOR"), ("Tufts", "HOSPITAL")]),
    ("Go to Hasbro ED if lethargic.", [("Hasbro", "HOSPITAL")]),
    ("sent to the Peds ED, pt seen in Main ED, from OSH ED, to Adult ED", []),
    ("pump d/c wed by option care.", [("option care", "ORGANIZATION")]),
    # the hospital's name ends before "urgent care" or "ED" (the generator marks the name only)
    ("Pt was seen at SLMC urgent care on 5/27", [("SLMC", "HOSPITAL")]),
    ("seen at Wentworth ED last wk", [("Wentworth", "HOSPITAL")]),
    ("dr ok'd if counts ok", []),
    # a capitalised English word right after a kinship word, on its line, in a mixed-case line
    ("Spoke w/ pt's husband Norm; pt febrile 101.3", [("Norm", "PATIENT")]),
    ("d/c'd to home w/ her sister\n\nFollowup Instructions\nDr. Lee in 2 wks", [("Lee", "DOCTOR")]),
    ("Spoke w/ pt's husband today; wife supportive", []),
    ("Cape Ann Internal Medicine, 41 Prospect Street", [("Cape Ann Internal Medicine", "HOSPITAL")]),
    ("General Internal Medicine clinic; Inpatient Physical Therapy eval", []),
    ("will f/u w/ Boston Health Care for the Homeless for PCP.", [("Boston Health Care for the Homeless", "HOSPITAL")]),
    ("Spaulding Rehab for PT eval", [("Spaulding Rehab", "HOSPITAL")]),
]
# Yearless month-day with a hyphen after a date cue; ranges of values are left alone.
ROUND15_DATES = [
    ("pt adm 3-14 w/ sob. echo done 3-15.", [("3-14", "DATE"), ("3-15", "DATE")]),
    ("Extubated on 4-20. cx from 12-2 neg", [("4-20", "DATE"), ("12-2", "DATE")]),
    ("family mtg thurs 11-6 w/ team", [("11-6", "DATE")]),
    ("HR 80-100, on 2-3L NC, from 2-3 days, since 1-2 wks", []),
    ("peep weaned from 10-12. levo titrated on 5-8", []),
    ("on 2-4 mcg, done 1-2 times, on 13-14", []),
    ("INR 2.3 on 3-14, K 3.4 repleted on 3-15", [("3-14", "DATE"), ("3-15", "DATE")]),
    # set 17: after "s/p" and up to three words of the procedure
    ("Pt 72 yo M w/ BMI 17, s/p PEG 10-3. TF Jevity", [("10-3", "DATE")]),
    ("88 yo f s/p r hip hemiarthroplasty 3-21, wbat.", [("3-21", "DATE")]),
    ("s/p fluid bolus 1-2 L, s/p lasix 40 iv 1-2 hrs", []),
]
ROUND15_ROADS = [
    ("32M unrestrained driver MVC on Rte 128 8/9", [("Rte 128", "STREET")]),
    ("lives off Route 9 in a trailer", [("Route 9", "STREET")]),
    ("route 2 of administration; RTE: PO", []),
    ("23F s/p MVC on I-93, I-131 uptake scan", [("I-93", "STREET")]),
    ("crash on Rt 1 in Saugus, Rt 2 fingers, on RT 3L, on rt side, on Route 3A", [
        ("Rt 1", "STREET"), ("Route 3A", "STREET")]),
    ("living in his car in the lot on route 1. route 2 of admin, on Route 9.", [
        ("route 1", "STREET"), ("Route 9", "STREET")]),
]

# Session 16: from challenge set 18 (ICU nursing notes across a stay): buildings and wards named
# after people, with their floor; a town before its police; named places after "Dispo:";
# relatives after plural shorthand ("dtrs"); short names that are also shorthand after a
# kinship word; the acute pain service before a name; "r.n." after a signature.
ROUND16 = [
    ("EVENTS: PT TRANSFERRED TO FENWICK 6 AT 1600.", [("FENWICK 6", "HOSPITAL")]),
    ("Transfer Note MICU -> Hollister 9\nPt is 55 yo", [("Hollister 9", "HOSPITAL")]),
    ("Plan: ?transfer to Whitlock 4 tomorrow if stable.", [("Whitlock 4", "HOSPITAL")]),
    ("transfer to Room 4, to MICU 7, transfer to Floor 6, called out to 7 West", []),
    ("Police (Tewksbury PD) called re: belongings.", [("Tewksbury", "CITY")]),
    ("State Police at bedside; police called", []),
    ("Dispo: ? Bournewood vs Gosnold after medically cleared.", [
        ("Bournewood", "HOSPITAL"), ("Gosnold", "HOSPITAL")]),
    ("Dispo: home vs rehab. dispo to SNF when stable. Dispo: TBD", []),
    ("family: dtrs ellen and fran in all day.", [("ellen", "PATIENT"), ("fran", "PATIENT")]),
    ("Family: wife Peg and son Alan visited.", [("Peg", "PATIENT"), ("Alan", "PATIENT")]),
    ("s/p PEG 10/3; son will call back; wife ED visit", []),
    ("pain 2-4/10. APS (Nadia) in to check, no changes.", [("Nadia", "DOCTOR")]),
    ("wife ginny called 0200, updated.\nbob r.n.\n", [("ginny", "PATIENT"), ("bob", "DOCTOR")]),
    ("last drink 8/23/24 per pt. Hx of DTs", []),
    # a relative whose name is a word, in capitals or lower case, before "in to visit" / "in at"
    ("SOCIAL: WIFE DOT IN TO VISIT, AWARE OF TRANSFER.", [("DOT", "PATIENT")]),
    ("family: dtr summer in at 1300, met w/ team", [("summer", "PATIENT")]),
    ("daughter also in to visit; son in at 1300; WIFE IN TO VISIT; son stayed overnight", []),
    # set 19: a place after a verb of going or calling whatever else the word is; a first name
    # after a role in parentheses; Kindred; "IP team"
    ("going home to quincy tonight.", [("quincy", "CITY")]),
    ("pt's son moe called from revere, aware of plan.", [("moe", "PATIENT"), ("revere", "CITY")]),
    # no place; Sandy is the nurse (session 18); whitney, a lexicon name in a lower-case line, is read
    # as the clinician a result was called to since session 23 (staff_after_called_to)
    ("report called to Sandy, called to whitney", [("Sandy", "DOCTOR"), ("whitney", "DOCTOR")]),
    ("last contact was Easter. SW (Imani) aware.", [("Imani", "DOCTOR")]),
    ("working on LTAC placement, Kindred screening tomorrow. kindred spirits", [("Kindred", "ORGANIZATION")]),
    ("Trach changed to #7 Portex by IP team today.", []),
    # set 20: a hospital by one word before a role; a dash signature with a first name and an
    # initial; a clergy title in parentheses; "in from" a place; a service before "fellow Dr. X"
    ("Endocrine (Joslin fellow Dr. Mensah) to see.", [("Joslin", "HOSPITAL"), ("Mensah", "DOCTOR")]),
    ("Palliative care (George Molina NP); Dr. Hall consult", [("George Molina", "DOCTOR"), ("Hall", "DOCTOR")]),
    ("Renal fellow, Pulm consult, Night resident, Maria resident, Stroke team", []),
    ("Wife Marjorie here.\nCards fellow Dr. Ibekwe.\n- Trish O.\n", [
        ("Marjorie", "PATIENT"), ("Ibekwe", "DOCTOR"), ("Trish O.", "DOCTOR")]),
    ("plan: f/u labs\n- no\n", []),
    ("chaplain (fr. tobin) in at 1600.", [("tobin", "DOCTOR")]),
    ("granddaughter april in from providence, pt's only", [("april", "PATIENT"), ("providence", "CITY")]),
    # set 21: a ward after "RN on"; a relative before "in,"; a quoted nickname; "Our Lady of X";
    # a first name and an initial as the last line; lower-case cvs after "at"; a town's FD
    ("Report given to Theresa RN on Fenmore 7 at 1600.", [("Theresa", "DOCTOR"), ("Fenmore 7", "HOSPITAL")]),
    ("soc: wife barb in, vey upset re: pt", [("barb", "PATIENT")]),
    ('Pt\'s family: wife "Tootsie" (Theodora), sons Butch', [("Tootsie", "PATIENT"), ("Butch", "PATIENT")]),
    ("PT'S FRIEND FROM CHURCH (OUR LADY OF GRACE) VISITED.", [("OUR LADY OF GRACE", "ORGANIZATION")]),
    ("Chaplain Rev. Mulcahy called.\nDeb C.\n", [("Mulcahy", "DOCTOR"), ("Deb C.", "DOCTOR")]),
    ("give vit K\nVitamin K\n", []),
    ("she works at cvs in braintree.", [("cvs", "ORGANIZATION"), ("braintree", "CITY")]),
    ("cvs: rrr, no m/r/g", []),
    ("Pt is a firefighter with Brockton FD; several coworkers", [("Brockton", "CITY")]),
    # set 22: the second of two doctors joined by a slash; a second opinion at a hospital;
    # a stepparent; a relative's name in parentheses even when it is a word; Meals on Wheels
    ("Cath today w/ Drs. Paz/Ng: 3VD", [("Paz", "DOCTOR"), ("Ng", "DOCTOR")]),
    ("wife requesting second opinion at Lahey; will call", [("Lahey", "HOSPITAL")]),
    ("mom (tanya) and stepdad (rob) at bedside, DTR (HOPE)", [
        ("tanya", "PATIENT"), ("rob", "PATIENT"), ("HOPE", "PATIENT")]),
    ("son (present), wife (aware), husband (2 sons)", []),
    ("Pt's Meals on Wheels driver found pt", [("Meals on Wheels", "ORGANIZATION")]),
    # set 23: "First Baptist"; a facility after "rehab at"; a first name and an initial before a
    # credential; a secretary by first name; "Fr." starts no name
    ("their pastor from First Baptist in Randolph visited.", [
        ("First Baptist", "ORGANIZATION"), ("Randolph", "CITY")]),
    ("CASE MGR GLENDA AWARE, ?REHAB AT SPAULDING.", [("GLENDA", "DOCTOR"), ("SPAULDING", "HOSPITAL")]),  # GLENDA: session 17
    ("plan rehab at home vs snf", []),
    ("UPDATED BY DR LUNDGREN.\nCHRISTINE P. RN / KWAME", [("LUNDGREN", "DOCTOR"), ("CHRISTINE P.", "DOCTOR")]),
    ("message left w/ his secretary Lois at x5-2290.", [("Lois", "DOCTOR")]),
    ("HCP: nephew Fr. Dan Keough", [("Dan Keough", "PATIENT")]),
    # set 24: schools without the word "school", daycares, "Elder Services of X", an employer in
    # parentheses, "Children's"; a lower-case "-ing" word is no surname
    ("Pt attends Mather Elementary; mom asks", [("Mather Elementary", "ORGANIZATION")]),
    ("MOM AT BEDSIDE.\nPT ATTENDS BOSTON ARTS ACADEMY.", [("BOSTON ARTS ACADEMY", "ORGANIZATION")]),
    ("skipping insulin at school (Ottoson Middle).", [("Ottoson Middle", "ORGANIZATION")]),
    ("Pt plays soccer for Needham High; coach", [("Needham High", "ORGANIZATION")]),
    ("R Middle Lobe, RIGHT MIDDLE LOBE, Temp High, FEVER HIGH, at Risk High, to the Middle", []),
    ("Pt attends Little Sprouts daycare in Medford", [("Little Sprouts", "ORGANIZATION"), ("Medford", "CITY")]),
    ("Elder services (Elder Services of Cape Cod) involved", [("Elder Services of Cape Cod", "HOSPITAL")]),
    ("Pt's employer (Gorton's in Gloucester) called", [("Gorton's", "ORGANIZATION"), ("Gloucester", "CITY")]),
    ("Pt's mom Erin is a nurse at Children's, very involved.", [("Erin", "PATIENT"), ("Children's", "HOSPITAL")]),
    ("give children's tylenol; to children's room", []),
    ("mom kayla breastfeeding, lactation (bridget) in", [("kayla", "PATIENT")]),
    # set 25: an employer after a job or a work cue (a three-letter acronym too), a union local,
    # initials a family uses as a name, "Army" starts no name, "summer house" is no facility
    ("Works at TJX corporate in Framingham; husband works at Raytheon.", [
        ("TJX", "ORGANIZATION"), ("Framingham", "CITY"), ("Raytheon", "ORGANIZATION")]),
    ("Pt is a chef at Legal Sea Foods in the Back Bay.", [("Legal Sea Foods", "ORGANIZATION")]),
    ("PT IS A MAIL CARRIER FOR USPS IN FOXBORO.", [("USPS", "ORGANIZATION")]),
    ("is a candidate for TAVR; is a poor candidate for CABG; is a good fit for CMO", []),
    ("retired pipefitter (union: Local 537), lives w/ wife", [("Local 537", "ORGANIZATION")]),
    ("WIFE ROXANNE, SONS DJ AND TREY AT BEDSIDE.", [("ROXANNE", "PATIENT"), ("DJ", "PATIENT"), ("TREY", "PATIENT")]),
    ("son rj called from nyc.", [("rj", "PATIENT")]),
    ("Summer house in Wells, ME, where he fell", [("Wells", "CITY"), ("ME", "STATE")]),  # ME: session 17
    ("Son Kyle (Army) stationed overseas", [("Kyle", "PATIENT")]),
    # set 26: a congregation in capitals; a name in parentheses after a role in a lower-case
    # line; a tribal nation; a clergy title starts no name
    ("PT IS A MEMBER OF MT. CALVARY BAPTIST; PASTOR HOLLOWAY VISITED.", [
        ("MT. CALVARY BAPTIST", "ORGANIZATION"), ("HOLLOWAY", "DOCTOR")]),
    ("somali interpreter (faadumo) used for update w/ dr nguyen.", [("faadumo", "DOCTOR"), ("nguyen", "DOCTOR")]),
    ("renal (consult) aware, cards (aware), sw (pt)", []),
    ("Navajo Nation CHR aware of admission.", [("Navajo Nation", "ORGANIZATION")]),
    ("Chaplain Pastor Sorenson from Bethany Lutheran called.", [
        ("Sorenson", "DOCTOR"), ("Bethany Lutheran", "ORGANIZATION")]),
]
# Session 16: holidays, hyphenated dates after a procedure and at the end of a range.
ROUND16_DATES = [
    ("pt asks to go home for thanksgiving.", [("thanksgiving", "DATE")]),
    ("last contact was Easter; by XMAS; Christmas disease (factor IX)", [("Easter", "DATE"), ("XMAS", "DATE")]),
    ("Pt known to this unit from admit 10-2 to 10-9 for PNA.", [("10-2", "DATE"), ("10-9", "DATE")]),
    ("pt adm 12-3 via ew w/ gi bleed, egd 12-4 w/ clip x2.", [("12-3", "DATE"), ("12-4", "DATE")]),
    ("CT 2-3 days ago; echo 1-2 wks; HR 80-100 to 110-120; cath 2-3 vessels", []),
    ("PT S/P EX LAP, SBR 12-8. POD 2.", [("12-8", "DATE")]),
    # a day of the month as an ordinal
    ("family mtg scheduled for the 9th at 1400.", [("9th", "DATE")]),
    ("AVR (Dr. Mahmoud) on the 7th.\nson coming Saturday the 13th from Albany.", [
        ("7th", "DATE"), ("13th", "DATE")]),
    ("on the 3rd floor, for the 2nd time, 5th ICS, the 4th dose", []),
    ("cath the 5th showed occluded SVG; echo the 2nd time", [("5th", "DATE")]),  # session 17
    ("PPM 12-5 w/ Dr. Olawale; ablation 12-1.", [("12-5", "DATE"), ("12-1", "DATE")]),
    ("ICD 1-2 shocks; coiling 2-3 coils", []),
    # month words in a lower-case or capitals line: with a year, or after "on"/"since" with a day
    ("LAST ABLATION MARCH 2023 AT BRIGHAM; seen dec 2023; DX SEPT OF 2019", [
        ("MARCH 2023", "DATE"), ("dec 2023", "DATE"), ("SEPT OF 2019", "DATE")]),
    ("ICD SHOCK X3 ON DEC 2. since may 4", [("DEC 2", "DATE"), ("may 4", "DATE")]),
    ("may 2000 mg; on MAR 2 tabs; on dec 2.5; may 2 weeks", []),
    # "resp failure" is no vital sign before a date; a procedure "planned" for a date
    ("MICU: resp failure, intubated 12-9. trach planned 12-13 w/ IP", [("12-9", "DATE"), ("12-13", "DATE")]),
    ("resp 12-14, weaned from 10-12", []),
    # a symptom rated out of ten is no date
    ("pt c/o chest pressure 6/10, ekg done", []),
    ("Neuro: A+Ox3, HA 4/10.", []),
]
# A bare age over 89 after "who is".
ROUND16_AGES = [
    ("wife harriet, who is 91. son peter", [("91", "AGE")]),
    ("sats fine, she is 95%; he is 100 lbs; mother (now 96) at home", [("96", "AGE")]),
    ("Pt's sister (96) also lives there; son (2) at home", [("96", "AGE")]),
    ("Husband Harold (91) at bedside; son Tim (4) at home", [("91", "AGE")]),
    ("Daughter Bernice (91 herself) and grandson", [("91", "AGE")]),  # session 17
    ("son Tim (45 himself) at home", []),
    ("father Seamus is 93, at home; mother Anne is 95.", [("93", "AGE"), ("95", "AGE")]),
    ("WIFE BEA IS 90, HOME W/ VNA; son is 95% sure", [("90", "AGE")]),
    ("WIFE LILLIAN, 95, ALSO AT ORCHARD COVE; son Tim, 45, at home", [("95", "AGE")]),
]

# Session 17, from challenge set 28: relatives whose names are words, before a cue other than
# a verb; health systems; a children's hospital by its place; employers before a job or in
# parentheses after "at work"; "and" inside an employer's name.
ROUND17 = [
    ("HUSBAND BUD AND SISTER MERCY AT BEDSIDE.", [("BUD", "PATIENT"), ("MERCY", "PATIENT")]),
    ("FATHER SONNY EN ROUTE FROM NEW HAMPSHIRE", [("SONNY", "PATIENT")]),
    ("PT'S SON ROCKY IS A FIREFIGHTER", [("ROCKY", "PATIENT")]),
    ("wife bunny on phone from home", [("bunny", "PATIENT")]),
    ("wife sugar (nickname) here all day", [("sugar", "PATIENT")]),
    ("DAUGHTER GLORY (HCP) IN.", [("GLORY", "PATIENT")]),
    ("wife present and son at bedside; son is a firefighter; daughter also on phone; wife (hcp) called", []),
    ("also sees Steward Health cardiology; NAVICENT HEALTH", [
        ("Steward Health", "HOSPITAL"), ("NAVICENT HEALTH", "HOSPITAL")]),
    ("Cambridge Health Alliance PCP", [("Cambridge Health Alliance", "HOSPITAL")]),
    ("f/u Mental Health; Dept of Public Health; Home Health Aide; Employee Health; Behavioral Health", []),
    ("Insurance Tufts Health Plan; Lake Anthony Health Center", [
        ("Tufts Health Plan", "ORGANIZATION"), ("Lake Anthony Health Center", "HOSPITAL")]),
    ("Peds endo clinic at Boston Children's; TRANSFER TO FRANCISCAN CHILDREN'S", [
        ("Boston Children's", "HOSPITAL"), ("FRANCISCAN CHILDREN'S", "HOSPITAL")]),
    ("Give Children's Tylenol 5 ml; Four Children's books", []),
    ("Pt is retired MBTA bus driver; a former Raytheon engineer", [
        ("MBTA", "ORGANIZATION"), ("Raytheon", "ORGANIZATION")]),
    ("retired bus driver, is a former nurse, PT IS A RETIRED SCHOOL TEACHER", []),
    ("dad Rusty at work (Raytheon), will come", [("Rusty", "PATIENT"), ("Raytheon", "ORGANIZATION")]),
    ("at work (night shift); AT WORK (NIGHT SHIFT)", []),
    ("Marisol works at Mass Eye and Ear as a tech.", [("Mass Eye and Ear", "ORGANIZATION")]),
    # set 29: one capitalised word that is also a word after a work cue; grocers and chains;
    # an employer after "job site"; "Physicians Group"; "Hospital of St. X"; an interpreter
    ("Pt works at Vertex in the Seaport. Pt is a professor at Northeastern.", [
        ("Vertex", "ORGANIZATION"), ("Northeastern", "ORGANIZATION")]),
    ("Works At Home; PT WORKS AT TARGET; works at night", []),
    ("PT FOUND DOWN AT MARKET BASKET; dtr works at dunkin, lost job at fedex", [
        ("MARKET BASKET", "ORGANIZATION"), ("dunkin", "ORGANIZATION"), ("fedex", "ORGANIZATION")]),
    ("FELL FROM LADDER AT JOB SITE (SUFFOLK CONSTRUCTION)", [("SUFFOLK CONSTRUCTION", "ORGANIZATION")]),
    ("PCP at Southcoast Physicians Group faxed records", [("Southcoast Physicians Group", "HOSPITAL")]),
    ("CABG 1998 (Hospital of St. Raphael, New Haven)", [("Hospital of St. Raphael", "HOSPITAL")]),
    ("INTERPRETER ESPERANZA USED FOR UPDATE.", [("ESPERANZA", "DOCTOR")]),
    ("spanish interpreter used; Interpreter services called; interpreter present", []),
    # set 30: "s/o" after a possessive is the significant other, elsewhere "suggestive of";
    # a relative whose name is a word before a verb of coming; "case mgr"
    ("Pt's s/o Marguerite called at 2300; his s/o tom here", [("Marguerite", "PATIENT"), ("tom", "PATIENT")]),
    ("CXR findings s/o Pneumonia; EKG changes s/o Ischemia; pt s/o to night team", []),
    ("PT'S MOTHER DEB DRIVING DOWN FROM VT", [("DEB", "PATIENT")]),
    ("case mgr Dontae from the shelter aware", [("Dontae", "DOCTOR")]),
    # set 31: "talked w/"; a maternal or paternal grandparent as "gm"/"gf"; a nickname in quotes
    ("Talked w/ Becca from pharmacy re: dosing", [("Becca", "DOCTOR")]),
    ("MATERNAL GM TAMMY TO RELIEVE MOM; pat gf joe here", [("TAMMY", "PATIENT"), ("joe", "PATIENT")]),
    ('Pt calls himself "Sarge", retired', [("Sarge", "PATIENT")]),
    ('1 gm tylenol given; nickname "the"', []),
    # set 32: New England facilities by a short name; "drives for"; a relative's word name before
    # "@ bs" or "to visit"
    ("listed at Lahey; f/u Joslin; pt seen at MGH; dtr works at bwh; TRANSFERRED FROM THE BI", [
        ("Lahey", "HOSPITAL"), ("Joslin", "HOSPITAL"), ("MGH", "HOSPITAL"), ("bwh", "HOSPITAL"),
        ("BI", "HOSPITAL")]),
    ("at Brigham and Women's Hospital; DANA-FARBER", [
        ("Brigham and Women's Hospital", "HOSPITAL"), ("DANA-FARBER", "HOSPITAL")]),
    ("Pt is a Brigham Young grad; on the bi-level; the bi pap", []),
    ("pt drives for Uber; drives at night", [("Uber", "ORGANIZATION")]),
    ("WIFE CRYSTAL AND DTR AMBER @ BS.", [("CRYSTAL", "PATIENT"), ("AMBER", "PATIENT")]),
    # set 33: a state code that is also a word or credential after a place; "fr." and "rev." in
    # lower case; a diabetes educator; a relative's word name after "lives with"
    ("chaplain fr. mulligan to see; diabetes educator Noreen to see", [
        ("mulligan", "PATIENT"), ("Noreen", "DOCTOR")]),
    ("lives w/ husband earl in town; lives w/ wife and son; lives with husband who", [("earl", "PATIENT")]),
    # set 34: a signature whose surname has a particle; Maine Med; a non-clinical contact's role;
    # daycare chains; an ambulance company after BIBA; Boston shelters and the MBTA; a relative
    # named by an initial
    ("pain controlled.\nD. ST. PIERRE RN\n", [("D. ST. PIERRE", "DOCTOR")]),
    ("report given.\nL. DE LA CRUZ RN", [("L. DE LA CRUZ", "DOCTOR")]),
    ("Pt transferred from Maine Med (Portland)", [("Maine Med", "HOSPITAL")]),
    ("union rep Sully called; boss aware; coach called", [("Sully", "PATIENT")]),
    ("attends KinderCare; goes to bright horizons", [
        ("KinderCare", "ORGANIZATION"), ("bright horizons", "ORGANIZATION")]),
    ("Pt BIBA (Cataldo) from home; BIBA (unresponsive)", [("Cataldo", "ORGANIZATION")]),
    ("REACHED VIA ROSIE'S PLACE; knows Pine Street staff; by MBTA police", [
        ("ROSIE'S PLACE", "ORGANIZATION"), ("Pine Street", "ORGANIZATION"), ("MBTA", "ORGANIZATION")]),
    ("dtr K. (prefers initial only); pt's son j. here overnight; son J. Smith here", [
        ("K.", "PATIENT"), ("j.", "PATIENT"), ("J. Smith", "PATIENT")]),
    # set 35: names with accented letters; a home in parentheses with its town; "went home";
    # "St." at a line's end is no saint before the next line's word; New England Baptist
    ("pt's mother Zsófia (visiting) here; Pt's husband Ramón at bedside", [
        ("Zsófia", "PATIENT"), ("Ramón", "PATIENT")]),
    ("husband is in a nursing home (Pleasant Bay in Brewster).", [("Pleasant Bay", "HOSPITAL")]),
    ("pt's wife dot went home at 2000", [("dot", "PATIENT")]),
    ("MOM WORKS ON HANCOCK ST.\nPT'S PEDIATRICIAN AWARE", []),
    ("PT FOLLOWED AT NEW ENGLAND BAPTIST FOR HIP", [("NEW ENGLAND BAPTIST", "HOSPITAL")]),
    # set 37: godparents, "auntie"; a relative's word name before "to bring" or "in."; Care
    # Dimensions; an employer in parentheses after a job; "accepted" ends a place after "Dispo:"
    ("godson nico at bs; pt's godmother auntie pam called", [("nico", "PATIENT"), ("pam", "PATIENT")]),
    ("SON MICKEY TO BRING CLOTHES; dtr kitty in.; dtr also in.", [("MICKEY", "PATIENT"), ("kitty", "PATIENT")]),
    ("hospice w/ Care Dimensions", [("Care Dimensions", "ORGANIZATION")]),
    ("Pt is a retired mailman (USPS); is a smoker (PPD)", [("USPS", "ORGANIZATION")]),
    ("DISPO: SPAULDING ACCEPTED, BED 12/6.", [("SPAULDING", "HOSPITAL")]),
]

# Session 17, from set 33: a state code that is also a word or a credential, after a place.
ROUND17_STATES = [
    ("from Indianapolis, IN, flying in; lives in Bangor, ME.", [("IN", "STATE"), ("ME", "STATE")]),
    ("Dr. Smith, MD; seen by Jackson, MD.; DR JACKSON, IN THE OR.; cc: Price, PA", []),
    ("Biloxi, MS 39530; Portland, OR.", [("MS", "STATE"), ("OR", "STATE")]),
]

# Session 18, from sets 38-40 (written by a second author): staff named after a role in
# lower-case and capitals lines, the nurse a shift is handed to, visitors named at the start
# of a sentence, employers after a job, a home "& Rehab" in capitals.
ROUND18 = [
    ("started np thandiwe aware; gi surg pa lucienne ext 5-4410", [("thandiwe", "DOCTOR"), ("lucienne", "DOCTOR")]),
    ("NSURG NP TOVAH (P-3318) AWARE", [("TOVAH", "DOCTOR")]),
    ("charge rn there raelynn says edw 82kg. nh rn loretha reports baseline.", [
        ("raelynn", "DOCTOR"), ("loretha", "DOCTOR")]),
    ("SW THERE PEGGY SAYS", [("PEGGY", "DOCTOR")]),
    ("NP SX FOR THICK SECRETIONS. PA CATH D/C'D. SW PSYCHOSOCIAL ASSESSMENT", []),
    ("pa pressures 40s. np swab sent. rn aware", []),
    ("Report given to Leocadia.", [("Leocadia", "DOCTOR")]),
    ("rpt to milt rn. report called to reenie rn at the rehab", [("milt", "DOCTOR"), ("reenie", "DOCTOR")]),
    ("report given to oncoming rn\nREPORT TO FLOOR RN", []),
    ("MAVIS CALLED AT 0230, UPDATED.", [("MAVIS", "PATIENT")]),
    ("integrilin off. shirl called at 2130", [("shirl", "PATIENT")]),
    ("Social: Kaylynn at bs until 2300. augie listed as contact.", [("Kaylynn", "PATIENT"), ("augie", "PATIENT")]),
    ("Pharmacy called. Family at bs. Renal called back. Nobody called.\nMICRO CALLED W/ GPC.", []),
    ("RETIRED MACHINIST FROM BOEING. retired longshoreman from Gloucester", [("BOEING", "ORGANIZATION")]),
    ("PT LIVES AT BAYBERRY NURSING & REHAB.", [("BAYBERRY NURSING & REHAB", "HOSPITAL")]),
    # second round (sets 42-45)
    ("social: gerry and nunzio in at 2000, both updated", [("gerry", "PATIENT"), ("nunzio", "PATIENT")]),
    ("Social: Norma and Wilbur at bs most of day.", [("Norma", "PATIENT"), ("Wilbur", "PATIENT")]),
    ("path.\nNena is HCP; pt lives w/ her", [("Nena", "PATIENT")]),
    ("Pharmacy and family called. Wife and kids at bs.", []),
    ("micu noc note 1900-0700\nortrud slept 2-3h total, woke 0300", [("ortrud", "PATIENT")]),
    ("MICU NPN 1900-0700\nPETRONELLA ON BIPAP 12/5", [("PETRONELLA", "PATIENT")]),
    ("MICU night events:\n2200 - Hettie pulled her a-line\n- 0930 Tad more alert today", [
        ("Hettie", "PATIENT"), ("Tad", "PATIENT")]),
    ("ccu npn\nstemi s/p pci to rca\nNGT pulled at 0200\nNEURO remains sedated\nFamily slept at bs", []),
    ("Family (contact list):\n  Mairead - wife/HCP - 401-555-0150\n  dil Bronagh - same #", [
        ("Mairead", "PATIENT"), ("Bronagh", "PATIENT")]),
    ("FAMILY: LOREDANA (WIFE/HCP) AT BS", [("LOREDANA", "PATIENT")]),
    ("dil gtt at 2; gs gpc; gd effect from dil\nSOCIAL: Married (wife Yolanda)", [("Yolanda", "PATIENT")]),
    ("per NSG (Iacobucci), keep SBP <160; neob notified; amr pickup at 1400; AMR noted on cx", [
        ("Iacobucci", "DOCTOR"), ("neob", "ORGANIZATION"), ("amr", "ORGANIZATION")]),
    ("Duxbury PD on scene; Det. Kerrigan here at 1000; officer on scene", [("Kerrigan", "PATIENT")]),
    ("MASS STATE POLICE AT BS", [("MASS STATE POLICE", "ORGANIZATION")]),
    # third round
    ("fell from staging at a Granite Ledge Builders site; assaulted outside Mulcahy's Pub", [
        ("Granite Ledge Builders", "ORGANIZATION"), ("Mulcahy's Pub", "ORGANIZATION")]),
    ("Urine Drug screen; went to a Sports Bar; Street Drugs", []),
    ("CIWA 14.\nDR Z AWARE @ 0140, NO NEW ORDERS", [("Z", "DOCTOR")]),
    ("UOP 20/HR, HO FERGAL AWARE", [("FERGAL", "DOCTOR")]),
    ("updated.\nHettie lives w/ her on Pleasant St. Pt lives w/ wife. Family lives with pt.", [("Hettie", "PATIENT")]),
    ("pt works at the 7-eleven near his house", [("7-eleven", "ORGANIZATION")]),
    # fourth round (sets 48, 49)
    ("FARSI ONLY. PHONE INTERPRETER ARDESHIR ID #30417\ninterpreter line used; INTERPRETER PHONE USED", [
        ("ARDESHIR", "DOCTOR")]),
    ("lvm for pt's probation officer kettleborough re: missed visit", [("kettleborough", "PATIENT")]),
    ("CCU NPN 7P-7A\nPT PENNYCUICK ADM W/ NSTEMI.\nPT AFEBRILE ADM W/ PNA.", [("PENNYCUICK", "PATIENT")]),
    ("Employer Gantry Precision Castings sent safety officer", [("Gantry Precision Castings", "ORGANIZATION")]),
    # set 50
    ("WIFE DOES NOT DRIVE, GIVEN TOWNLINE TAXI VOUCHER. ISSUED BY HAVERHILL DISTRICT COURT", [
        ("TOWNLINE TAXI", "ORGANIZATION"), ("HAVERHILL DISTRICT COURT", "ORGANIZATION")]),
    ("SW filed APS report w/ Minuteman Senior Services; family belongs to Shri Ambaji Mandir", [
        ("Minuteman Senior Services", "ORGANIZATION"), ("Shri Ambaji Mandir", "ORGANIZATION")]),
    ("took a cab home; the Court; Probate Court; KESTREL FREIGHT WAREHOUSE", []),
    ("Wife asking if pt can take The RIDE to cardiac rehab; a ride home", [("The RIDE", "ORGANIZATION")]),
    ("social: aps worker chinasa ezenwa from old colony; house mgr femi says; case worker aware", [
        ("chinasa ezenwa", "DOCTOR"), ("femi", "DOCTOR")]),
    # fifth round (sets 51-53)
    ("Pt works at the Altamaha Poultry plant; retired from Bayou Industrial Services", [
        ("Altamaha Poultry", "ORGANIZATION"), ("Bayou Industrial Services", "ORGANIZATION")]),
    ("Pt hauls his corn to Hawkeye Prairie Co-op.", [("Hawkeye Prairie Co-op", "ORGANIZATION")]),
    ("CONTRACT GROWER FOR NODAWAY PORK LLC. STAYING AT THE ALPENGLOW LODGE", [
        ("NODAWAY PORK LLC", "ORGANIZATION"), ("ALPENGLOW LODGE", "ORGANIZATION")]),
    ("Their son, everybody calls him Bubba, driving up; she calls him back", [("Bubba", "PATIENT")]),
    ("pastor tveit stopped by; pastor aware; pastor rev. visited", [("tveit", "PATIENT")]),
]

# Session 18, fourth round: a town abroad before its country.
ROUND18_ABROAD = [
    ("PT'S WIFE CALLED FROM SHIRAZ, IRAN AT 2330", [("SHIRAZ", "CITY")]),
    ("son called from cardiff, wales, pt tearful; wife called from praia, cabo verde, at 1600", [
        ("cardiff", "CITY"), ("praia", "CITY")]),
    ("note from Smith, MD; sent to Jones, RN at 1500", []),
]

# Session 18: a pager written with a space for the dash, not a bag number after "#".
ROUND18_PHONES = [
    ("PAGED DR. CHIZ (CHISOLM) PGR 5 1093 RE: VAC LEAK", [("5 1093", "PHONE")]),
    ("K 4 REPLETED, #2 1000 BOLUS GIVEN", []),
]

# Session 18, second round: streets of an intersection, three-digit interstates, counties.
ROUND18_PLACES = [
    ("t-boned at Gleasondale Rd & Boxboro Rd in Stow", [
        ("Gleasondale Rd", "STREET"), ("Boxboro Rd", "STREET"), ("Stow", "CITY")]),
    ("STRUCK AT CORNER OF UNION ST AND COTTAGE ST", [("UNION ST", "STREET"), ("COTTAGE ST", "STREET")]),
    ("ROLLOVER ON I-495 NB; s/p I-131 tx", [("I-495", "STREET")]),
    ("pending thru scott county fsd office; FROM SCOTT COUNTY", [("scott county", "CITY"), ("SCOTT COUNTY", "CITY")]),
    ("lives in this county; orange county", []),
    ("farm off County Rd 1700", [("County Rd", "STREET")]),  # the road, not a county
    ("MOTHER FROM HUDSON, N.H. AT BS.", [("HUDSON", "CITY")]),
]

# Session 18: dates in capitals after a procedure or an event, "the 5TH".
ROUND18_DATES = [
    ("S/P CABG X3 DEC 3. TCDS DEC 4 NO VASOSPASM. TO OR FOR STSG DEC 5 W/ DR", [
        ("DEC 3", "DATE"), ("DEC 4", "DATE"), ("DEC 5", "DATE")]),
    ("trach dec 8 tex agrees", [("dec 8", "DATE")]),
    ("PEEP DEC 8. LEVO DEC 2 MCG. lasix dec by 2; cabg dec to 2", []),
    ("SICU events 12-3\nS/P L CRANI FOR GBM RESECTION 12-2.", [("12-3", "DATE"), ("12-2", "DATE")]),
    ("FAMILY MTG W/ DR A ON THE 5TH @ 1400. ON THE 3RD FLOOR", [("5TH", "DATE")]),
    ("wife says last drink was the 9th.\nthe pt was the 2nd of 5 kids", [("9th", "DATE")]),
    ("re-explored x1, abd closed 11.5.\npt adm w/ chb on 11.5, ppm placed 11.6 by dr l", [
        ("11.5", "DATE"), ("11.5", "DATE"), ("11.6", "DATE")]),
    ("K 3.5 repleted. on 2.5 mcg levo. weaned on 5.5. on 12.5 PEEP. Cr 1.8 up from 1.4. LACTATE 2.1 FROM 3.4", []),
]

# Session 22, from set 87's misses: relatives, friends and staff named with no cue word, read from
# their sentence context (a person verb after, a list of visitors, a contact verb in a line whose
# case says nothing, a service in parentheses, a possessive team).
ROUND22 = [
    # a title's dot is no sentence end; kinship shorthand and a facility are no clinician
    ("Pathology is pending; Dr. Greene will call the patient with results.", [("Greene", "DOCTOR")]),
    ("spoke w/ hsb (Michael) re goals. CALLED WILSONPORT SKILLED NURSING FACILITY ADMISSIONS.", []),
    ("family meeting held. oksana asking about hospice again. grusha wants a second opinion.", [
        ("oksana", "PATIENT"), ("grusha", "PATIENT")]),
    ("Ingeborg said pt never wanted a trach; Torleif agrees with his sister.", [
        ("Ingeborg", "PATIENT"), ("Torleif", "PATIENT")]),
    ("lab called, k 6.1. zbyszek and wanda in this am, upset.", [("zbyszek", "PATIENT"), ("wanda", "PATIENT")]),
    ("VISITORS: ALDONA, RAIMUNDAS AND JURGIS. ALDONA CALLING FROM KAUNAS", [
        ("ALDONA", "PATIENT"), ("RAIMUNDAS", "PATIENT"), ("JURGIS", "PATIENT"), ("ALDONA", "PATIENT")]),
    ("family: ottilie (hcp) and rainer in 1400.", [("ottilie", "PATIENT"), ("rainer", "PATIENT")]),
    ("d/w przybylski, will recheck lytes.\nD/W OYELARAN-BOYD RE PLAN", [
        ("przybylski", "DOCTOR"), ("OYELARAN-BOYD", "DOCTOR")]),
    ("Met at 1100 w/ Szczepanik (onc) and Abernethy-Quist (SW).", [
        ("Szczepanik", "DOCTOR"), ("Abernethy-Quist", "DOCTOR")]),
    ("dilaudid per szymanski's fellow, then haldol per okonkwo's resident.", [
        ("szymanski", "DOCTOR"), ("okonkwo", "DOCTOR")]),
    ("s/p whipple (3/14, kowalewski) and lap chole 4/2, Ferreira-Boyd.", [
        ("kowalewski", "DOCTOR"), ("Ferreira-Boyd", "DOCTOR")]),
    ("kids went home w/ brinley (6 yo). pt wants only teodora given updates; all calls go thru teodora", [
        ("brinley", "PATIENT"), ("teodora", "PATIENT"), ("teodora", "PATIENT")]),
    ("Abramowitz, MICU attending", [("Abramowitz", "DOCTOR")]),
    ("COWORKER CHEPE (ROOMMATE) AT BS", [("CHEPE", "PATIENT")]),
    # look-alikes: services and units, drugs and clinical words, common words, groups of people
    ("micu called. nephrology called back. Renal agrees. Ortho wants xr. Pharmacy asking re vanc.", []),
    ("nephrology called, MICU CALLED, d/w micu, d/w nephrology, PAGED CSRU RES, d/w attending", []),
    ("Discussed with attending. Spoke with pt's son. DISCUSSED WITH SICU TEAM", []),
    ("abd left open. LEVO ASKED FOR BY ANESTHESIA. egd at bs 2200. Grandkids calling for updates.", []),
    ("admitted 11/28, diuresed. fall 9/14, sdh/sah. ADM 11/23 W/ NSTEMI. seen 4/2, Boston.", []),
    ("Cardiology (fellow) aware. vanc (id) approved. Pt (45 yo) w/ sob. Family: wife and son at bedside.", []),
    ("Family: aware, supportive. visitors: none. the dean's office called; pt's team; Tylenol (650 mg)", []),
    ("only patient gets meds; pain wants tx; Lasix stayed at 40; propofol asked for", []),
]


TABLES = {
    "round 22 employers": ([
        ("pt is a chemist at biogen, wants his laptop. son is a cook at pho hoa.", [
            ("biogen", "ORGANIZATION"), ("pho hoa", "ORGANIZATION")]),
        ("Daughter is a teacher's aide at Sacred Heart School; she's a 2nd grade teacher at Angier.", [
            ("Sacred Heart School", "ORGANIZATION"), ("Angier", "ORGANIZATION")]),
        ("PT IS A TRUCK DRIVER FOR ESTES EXPRESS; PT IS A ROOFER W/ QUIMBY ROOFING.", [
            ("ESTES EXPRESS", "ORGANIZATION"), ("QUIMBY ROOFING", "ORGANIZATION")]),
        ("ins is pemaquid mutual. ins wellcare medicare adv, id 94827. ins is humana concern for burnout", [
            ("pemaquid mutual", "ORGANIZATION"), ("wellcare", "ORGANIZATION"), ("humana", "ORGANIZATION")]),
        ("WORKERS COMP CARRIER IS GRANITE MUTUAL, CLAIM # 4487.", [("GRANITE MUTUAL", "ORGANIZATION")]),
        ("her o2 company is keystone medical supply.", [("keystone medical supply", "ORGANIZATION")]),
        ("vf arrest at work (genzyme) 7/7. his boss from dowd forest products called.", [
            ("genzyme", "ORGANIZATION"), ("dowd forest products", "ORGANIZATION")]),
        ("Emailed his boss at Toray. Grad student at Northeastern.", [
            ("Toray", "ORGANIZATION"), ("Northeastern", "ORGANIZATION")]),
        ("dtr teaches at frontier regional, called at lunch.", [("frontier regional", "ORGANIZATION")]),
        # not employers: a place of care, a school in plain words, an age and sex, a state of care
        ("pt is a teacher at the high school in town. pt is a resident at the nursing home.", []),
        ("pt is a seventy-year-old man with copd. PT IS A 70 YO MAN WITH CHF. Pt is a full code at this time.", []),
        ("ins pending. ins auth needed. ins and outs even. supervisor at bedside. student at bedside.", []),
        ("pt is a smoker at baseline; she's a fall risk at night; at work (night shift)", []),
        ("she's a bookkeeper at Six Flags and has taken the wk off.", [("Six Flags", "ORGANIZATION")]),
    ], {"ORGANIZATION"}),
    "round 22 no cue": (ROUND22, NAMES),
    "round 23 first": ([
        ("HEPARIN OFF 2300 PER NWOSU.", [("NWOSU", "DOCTOR")]),
        ("3% bolus 250cc per harjit. na 148 at 2300.", [("harjit", "DOCTOR")]),
        ("2U PRBC PER MWANGI, REPEAT 29. SPEED TO 5500 PER TEODORESCU 2200.", [
            ("MWANGI", "DOCTOR"), ("TEODORESCU", "DOCTOR")]),
        ("bronch by lindqvist 0900, cx sent.", [("lindqvist", "DOCTOR")]),
        ("PRESSURE HELD X 20 MIN W/ DELACROIX.\nturned q2 w/ halima, sacrum intact.", [
            ("DELACROIX", "DOCTOR"), ("halima", "DOCTOR")]),
        ("12 LEAD DONE, SHOWN TO FOLASADE, NO CHANGE.\nread called to Ngozi.", [
            ("FOLASADE", "DOCTOR"), ("Ngozi", "DOCTOR")]),
        # order forms, scales, devices, services, plain words and drugs: no clinician
        ("dnr/dni per molst. heparin gtt per nomogram. DNR/DNI PER POLST. titrated per rass.", []),
        ("MAP 78 BY DOPPLER. per protocol. per renal. by mouth. per family. shocked x1 by icd.", []),
        ("AMBULATED W/ WALKER. transferred w/ nstemi. turned w/ lift. called to bedside. called to OR.", []),
        ("songs sung by salarymen. +loc per co-worker. red cell exchange by haem.", []),
    ], NAMES),
    "round 23 second": ([
        ("pt brzezinski, 24 m, mvc 6/30 near athol, l femur fx.", [("athol", "CITY")]),
        ("23 yo F, rollover MVC near Ajo 11/2, ejected.", [("Ajo", "CITY")]),
        ("MVC 2/9 WHILE DRIVING BETWEEN VISITS NEAR COBLESKILL.", [("COBLESKILL", "CITY")]),
        # no event, or no place: nothing
        ("near syncope at home. fell near the bed. mvc, near baseline now. found near death.", []),
    ], {"CITY"}),
    "round 23 third": ([
        ("PLAN: START TPN IN AM, PHARM LARISSA TO ORDER.\nSKIN: SACRAL STAGE 2, WOUND RN OLUWAKEMI TO SEE.", [
            ("LARISSA", "DOCTOR"), ("OLUWAKEMI", "DOCTOR")]),
        ("trauma pgy2 novak pg 47719. followed by cardiologist mehta. cde ngozi eze", [
            ("novak", "DOCTOR"), ("mehta", "DOCTOR"), ("ngozi eze", "DOCTOR")]),
        # an order, a service, a pager, a service name: no name
        ("pharm consult placed. wound rn to see. slp eval today. surgeon aware. surgeon ok's plan.", []),
        ("ERIN CASTELLANOS, MD PGY-2 PGR #41927\npgy-1 hospitalist service", [("ERIN CASTELLANOS", "DOCTOR")]),
    ], NAMES),
    "round 23 fourth": ([
        ("INSURANCE: COMMONWELL SENIOR ADVANTAGE, AUTH FOR SNF REQUESTED.", [("COMMONWELL SENIOR ADVANTAGE", "ORGANIZATION")]),
        ("Ins Cascadia Senior Health approved infusion. Insurance: Pilgrim Shield Medicare Plan, hospice.", [
            ("Cascadia Senior Health", "ORGANIZATION"), ("Pilgrim Shield Medicare Plan", "ORGANIZATION")]),
        ("workers comp claim open w/ pinepoint casualty; their nurse case manager wants updates.", [
            ("pinepoint casualty", "ORGANIZATION")]),
        # Medicare, a plain or possessive plan, no insurer: nothing
        ("insurance: medicare plan. ins: private health insurance. insurance: on father's plan, pending.", []),
        ("INS: NO HEALTH INSURANCE. insurance will cover home care.", []),
    ], {"ORGANIZATION"}),
    "round 23 fifth": ([
        ("NIGHT RT KOFI AND CHARGE NURSE AWARE OF PLAN.", [("KOFI", "DOCTOR")]),
        ("gi: ostomy pink, no output yet. wocn leilani to see in am. rachelle baysa rn, resource kimo", [
            ("leilani", "DOCTOR"), ("rachelle baysa", "DOCTOR"), ("kimo", "DOCTOR")]),
        ("flown fixed wing from Musselshell Valley Hospital by Big Sky AirMed, intubated at OSH.", [
            ("Big Sky AirMed", "ORGANIZATION")]),
        ("FOUND DOWN AT HOME 7/16, FLOWN HERE BY DAKOTA AIR CARE. VIA PENNYRILE AIR 10/2.", [
            ("DAKOTA AIR CARE", "ORGANIZATION"), ("PENNYRILE AIR", "ORGANIZATION")]),
        # a side, a device, a plain way of travel: nothing
        ("rt arm swollen. RT IJ CVL. night rt aware. resource nurse called. flown by air. transferred via life flight.", []),
    ], NAMES | {"ORGANIZATION"}),
    "round 24 first": ([
        ("ins thimbleberry health plan, auth pending.\nINS: BLUEGRASS SENIOR ADVANTAGE.", [
            ("thimbleberry health plan", "ORGANIZATION"), ("BLUEGRASS SENIOR ADVANTAGE", "ORGANIZATION")]),
        ("retired miner, ins thru culinary health fund, cm aware.", [("culinary health fund", "ORGANIZATION")]),
        # coverage words and plans with no name of their own: nothing
        ("ins: employer health plan. ins thru state health plan, pending. ins: private health insurance.", []),
    ], {"ORGANIZATION"}),
    "round 24 second": ([
        ("pastor obi from st. bartholomew of tyre visited, prayed w/ family.", [
            ("st. bartholomew of tyre", "ORGANIZATION")]),
        ("FR. NIKOLAOS FROM ST. SPYRIDON GREEK ORTHODOX VISITED 1900.", [
            ("ST. SPYRIDON GREEK ORTHODOX", "ORGANIZATION")]),
        ("Rabbi Adler from Temple Har Zion called.", [("Temple Har Zion", "ORGANIZATION")]),
        # a church with no name, a place: nothing
        ("Father Tom from the parish will visit. bishop from their church called. father from st. louis.", []),
    ], {"ORGANIZATION"}),
    "round 24 third": ([
        ("SOCIAL: PT IS WELDER AT KENNEBEC MARINE FABRICATION, WIFE AWARE.", [
            ("KENNEBEC MARINE FABRICATION", "ORGANIZATION")]),
        ("pt is floorhand for red mesa pressure pumping, safety rep called.", [
            ("red mesa pressure pumping", "ORGANIZATION")]),
        ("Pt is deckhand for Bayou Teche Shrimp Co, out of Delcambre.", [("Bayou Teche Shrimp Co", "ORGANIZATION")]),
        # a surname that is a job, a purpose, a place in the room: nothing
        ("keep map > 65, notify cook for sbp < 90. visiting nurses for wound checks. officer at door.", []),
    ], {"ORGANIZATION"}),
    "round 24 fourth": ([
        ("palliative consult (ida np, pg 6610) in am. pg 4112 if questions.", [
            ("ida", "DOCTOR"), ("6610", "PHONE"), ("4112", "PHONE")]),
        ("hx cabg '98 at hamot.\nRCA STENT '04 @ JEFFERSON, CARDIOLOGIST AWARE.", [
            ("hamot", "HOSPITAL"), ("JEFFERSON", "HOSPITAL")]),
        ("wife at bedside; tamsin's # 617-555-0133.", [("tamsin", "PATIENT"), ("617-555-0133", "PHONE")]),
        ("up to chair w/ katya from cardiac rehab.\nBill Sorensen from RT at bedside.", [
            ("katya", "DOCTOR"), ("Sorensen", "DOCTOR")]),
        # a page of a form, a place on the body, a plain word's phone, a possessive service: nothing
        ("see pg 2 of consent. stent '04 at baseline. cabg 2011 at home. the pt's # on file.", []),
        ("visitors from pt's church. labs from rt arm.", []),
    ], NAMES | {"PHONE", "HOSPITAL"}),
    "round 24 fifth": ([
        ("SON WILL STAYED OVERNIGHT. brother will is contact per chart.", [("WILL", "PATIENT"), ("will", "PATIENT")]),
        ("Social: husband Ed and sister Joy visited. wife dot (dorothy) called.", [
            ("Ed", "PATIENT"), ("Joy", "PATIENT"), ("dot", "PATIENT"), ("dorothy", "PATIENT")]),
        ("husband earl at home, hard of hearing.", [("earl", "PATIENT")]),
        # the verb "will", the emergency department: nothing
        ("son will call in am. wife will be here at 1000. husband will stay. son ED visit last wk.", []),
        ("flown here via PHI Air Medical, intubated. via life flight network.", [("PHI Air Medical", "ORGANIZATION")]),
    ], NAMES | {"ORGANIZATION"}),
    "round 24 sixth": ([
        ("TX'D TO DEACONESS VIA STAT FLIGHT. FLOWN TO METHODIST VIA LIFELINE.", [
            ("DEACONESS", "HOSPITAL"), ("METHODIST", "HOSPITAL")]),
        ("pt transferred from sturdy memorial 3/4 w/ chf.", [("sturdy memorial", "HOSPITAL")]),
        # a unit, a tube, a pharmacy, the floor, a four-letter acronym: nothing
        ("?tx to stepdown tmrw. amylase sent from drain. refill sent to walgreens. transferred to floor.", []),
    ], {"HOSPITAL"}),
    "round 22 sixth": ([
        ("heme: hct 27 -> 25, achterberg notified, repeat at 0400.", [("achterberg", "DOCTOR")]),
        ("CR 2.1 FROM 1.8, MARISA AWARE.", [("MARISA", "DOCTOR")]),
        ("Priyanka ok'd diuresis w/ lasix gtt 10/hr.", [("Priyanka", "DOCTOR")]),
        ("pharm (okafor) called re: ticagrelor.", [("okafor", "DOCTOR")]),
        # a service, a role, a unit, an agency, a place after a preposition: no clinician
        ("renal aware. charge aware. case mgmt aware. neob notified. micu notified.", []),
        ("FAMILY IN ECUADOR AWARE. DPH NOTIFIED BY ID. NOCTURNIST AWARE.", []),
    ], NAMES),
    "round 22 fifth": ([
        ("gus from merrimack valley pallet called re: his job.", [("gus", "PATIENT")]),
        ("YOLETTE FROM MAPLEWOOD CALLED W/ BASELINE.", [("YOLETTE", "PATIENT")]),
        ("skeeter (from work) called at 1900.", [("skeeter", "PATIENT")]),
        ("halyna on phone again re: dnr. Adilson interprets by phone.", [("halyna", "PATIENT"), ("Adilson", "PATIENT")]),
        ("POD 3 s/p Whipple, Medeiros's pt.", [("Medeiros", "DOCTOR")]),
        # a role, a department or a plain word before "from": no name
        ("the priest from st. anne's came. Pharmacy from main called. Labs from osh came back.", []),
        ("the patient's pt. family on the phone. Surgery's patient.", []),
    ], NAMES),
    "round 22 fourth": ([
        ("SOCIAL: SVETA AND VOVA HERE UNTIL 2100.", [("SVETA", "PATIENT"), ("VOVA", "PATIENT")]),
        ("social: declan and siobhan in until 2100.", [("declan", "PATIENT"), ("siobhan", "PATIENT")]),
        ("Social: Joy and Nadege here, pt lives w/ Nadege.", [("Joy", "PATIENT"), ("Nadege", "PATIENT"), ("Nadege", "PATIENT")]),
        ("WANTS TO FLY UP, TOLD TO TALK W/ SVETA.", [("SVETA", "PATIENT")]),
        ("will meet w/ yari tmrw re: insurance", [("yari", "PATIENT")]),
        ("carmen's cell 617-555-0171, she is the one to reach.", [("carmen", "PATIENT")]),
        ("ROSEMENE TRANSLATING FOR PT, CONSENT BY PHONE.", [("ROSEMENE", "PATIENT")]),
        # what a patient does, a kinship word, a service, an agency: no names
        ("social: works on a paving crew. social: lives alone, retired.", []),
        ("pt lives w/ wife. home w/ vna. check w/ pharmacy. lives w/ dtr. talk w/ family.", []),
        ("pt's cell is dead. the office's number is on file.", []),
    ], NAMES),
    "round 22 back to": ([
        ("dispo: back to rosecliff when stable, nh aware.", [("rosecliff", "HOSPITAL")]),
        ("Plan to return to Glenmeadow once at dry weight. Will go back to Quarry Hill when ready.", [
            ("Glenmeadow", "HOSPITAL"), ("Quarry Hill", "HOSPITAL")]),
        ("PLAN BACK TO HOLLOWBROOK WHEN STABLE, OSTOMY NURSE TO TEACH", [("HOLLOWBROOK", "HOSPITAL")]),
        # a unit, a rhythm, a state, a facility word or plain words: no home named
        ("back to sleep. return to baseline. back to CCU. BACK TO OR. back to floor. BACK TO SINUS.", []),
        ("back to dialysis tomorrow. back to Baseline. back to bed. back to work monday. back to lasix gtt.", []),
        ("PLAN: BACK TO THE MANOR WHEN OFF PRESSORS. back to 7 west when stable.", []),
    ], {"HOSPITAL"}),
    "round 19 staff": ([
        ("res Oduro to bedside. NSurg res Pradhan checked EVD.\nRES SUNDARAM AWARE OF HCT.", [
            ("Oduro", "DOCTOR"), ("Pradhan", "DOCTOR"), ("SUNDARAM", "DOCTOR")]),
        ("updated by res at 0100. res 30cc, RES 200CC; resp: res and wheezes", []),
        ("PAGED H.O. GORSKI PGR 3-0076", [("GORSKI", "DOCTOR")]),
        ("referral sent, cm filippa alves sent it at 1400", [("filippa alves", "DOCTOR")]),
        ("SW PHILIPPA ORENSTEIN PAGED; SW RUQAYYA BPR 4471\nnp thandiwe aware of k", [
            ("PHILIPPA ORENSTEIN", "DOCTOR"), ("RUQAYYA", "DOCTOR"), ("thandiwe", "DOCTOR")]),
        ("accepted per their liaison aoibhinn. spoke w/ nh unit mgr clem at 0300", [
            ("aoibhinn", "DOCTOR"), ("clem", "DOCTOR")]),
        ("SPOKE W/ THEIR NURSING SUP MARTHE 401-555-0136", [("MARTHE", "DOCTOR")]),
        ("advocate joaquin saw pt; case manager aware", [("joaquin", "DOCTOR")]),
    ], NAMES),
    "round 19 places": ([
        ("PT TO BIGELOW 9 BED 4; pt to Farr 8 when bed ready", [("BIGELOW 9", "HOSPITAL"), ("Farr 8", "HOSPITAL")]),
        ("on levo 6, weaned to room 6, pod 3, to stage 2", []),
        ("transferred from holyoke medical 7/9; general medical floor; reading medical records", [
            ("holyoke medical", "HOSPITAL")]),
        ("TAKEN TO HOLY FAMILY IN METHUEN", [("HOLY FAMILY", "HOSPITAL")]),
        ("REFERRALS TO HEALTHSOUTH WOBURN; mentioned HealthSouth today; VIBRA SCREENED PT", [
            ("HEALTHSOUTH WOBURN", "HOSPITAL"), ("HealthSouth", "HOSPITAL"), ("VIBRA", "HOSPITAL")]),
        ("union rep from teamsters local 25; 40 YRS W/ IRONWORKERS LOCAL 7; local 2 hrs", [
            ("teamsters local 25", "ORGANIZATION"), ("IRONWORKERS LOCAL 7", "ORGANIZATION")]),
    ], {"HOSPITAL", "ORGANIZATION"}),
    "round 19 employers": ([
        ("pt works at valvoline instant oil change in town, manager called.", [
            ("valvoline instant oil change", "ORGANIZATION")]),
        ("he works at raytheon in andover; formerly worked for des moines logistics never smoker", [
            ("raytheon", "ORGANIZATION"), ("des moines logistics", "ORGANIZATION")]),
        ("works at the post office. works at night, works at a bank; he works for the city", []),
    ], {"ORGANIZATION"}),
    "round 19 second": ([
        ("PAGED PA DELORME P#2291, LOPRESSOR", [("DELORME", "DOCTOR"), ("2291", "PHONE")]),
        ("PLAN: NPO\nRN: C. ANYANWU / PGR 5-0934", [("C. ANYANWU", "DOCTOR"), ("5-0934", "PHONE")]),
        ("correct # 508-555-0191.\nR.N. Hollis-Baptiste  pgr 48812", [
            ("508-555-0191", "PHONE"), ("Hollis-Baptiste", "DOCTOR"), ("48812", "PHONE")]),
        ("x\nRN: pt stable\nRN aware\nrn: will f/u", []),
        ("per lincoln pd etoh on board; chelsea fd notified; pt has pd; reading pd", [
            ("lincoln", "CITY"), ("chelsea", "CITY")]),
        ("referral to vna of western mass, cm; home w/ vna of choice; vna of the south shore coming tues", [
            ("vna of western mass", "ORGANIZATION"), ("vna of the south shore", "ORGANIZATION")]),
        ("DISPO: HOME W/ VNA OF GREATER LOWELL TO START TUES", [("VNA OF GREATER LOWELL", "HOSPITAL")]),
        ("neighborhood health plan not in network; HARVARD PILGRIM; bmc healthnet", [
            ("neighborhood health plan", "ORGANIZATION"), ("HARVARD PILGRIM", "ORGANIZATION"),
            ("bmc healthnet", "ORGANIZATION")]),
    ], NAMES | {"PHONE", "HOSPITAL", "ORGANIZATION", "CITY"}),
    "round 19 countries": ([
        ("moved from Haiti in 1991; visiting from Ireland; sister in Scotland; trip to greece", []),
        ("lives in Quincy; moved to georgia; lives in Peru, IN; in Norway ME", [
            ("Quincy", "CITY"), ("georgia", "CITY"), ("Peru", "CITY"), ("Norway", "CITY")]),
    ], {"CITY"}),
    "round 19 generator conflicts": ([
        ("CLIA # 14D5610911   Lab Director Dawn Hayes MD PhD\nAuthor Brian Jones MD (user bjj26)", [
            ("Dawn Hayes", "DOCTOR"), ("Brian Jones", "DOCTOR")]),
        ("EXAM: MR L SPINE W/O CONTRAST\nexamination: mr l spine w/o contrast", []),
    ], NAMES),
    "round 19 quoted": ([
        ('friend from church "Hildy" left msg; calling out for "Horatio"', [("Hildy", "PATIENT"), ("Horatio", "PATIENT")]),
        ('"DRE" AND "LIL MIKE" ASKING FOR UPDATES', [("DRE", "PATIENT"), ("LIL MIKE", "PATIENT")]),
        ('pt states she feels "fine"; "help me"; asking for "cookie"; "Big Al" visited', []),
    ], NAMES),
    "round 19 fourth": ([
        ("dtr here.\n-annalise brogan, rn  #3-6620", [("annalise brogan", "DOCTOR"), ("3-6620", "PHONE")]),
        ("dr satterwhite (ccu attending), pall care np, sw, this rn", [("satterwhite", "DOCTOR")]),
        ("cm efua donahoe bp 11872 sent referrals; bp 110/60", [("efua donahoe", "DOCTOR"), ("11872", "PHONE")]),
        ("PAGED DR FAIRCHILD-OSEI AT 4-8812, GIVEN MAG; paged at 0200 re bp", [
            ("FAIRCHILD-OSEI", "DOCTOR"), ("4-8812", "PHONE")]),
        ("— s. loomis rn ( 3-5507 )", [("s. loomis", "DOCTOR"), ("3-5507", "PHONE")]),
        ("plan c/o to rosenberg 5 tele when bed\nTRANSFERRED TO SICU FROM STONEMAN 5 6/29/00", [
            ("rosenberg 5", "HOSPITAL"), ("STONEMAN 5", "HOSPITAL"), ("6/29/00", "DATE")]),
        ("SHE IS AT BS. WORKS IN A WAREHOUSE FOR DHL IN WILMINGTON", [("DHL", "ORGANIZATION"), ("WILMINGTON", "CITY")]),
        ("Retired, worked 30 yrs on the docks for Cape Pond Ice. Wife", [("Cape Pond Ice", "ORGANIZATION")]),
        ("lasix worked well for diuresis.\nWORKED UP FOR SEPSIS.\ndilaudid works better for Pain", []),
    ], NAMES | {"PHONE", "HOSPITAL", "ORGANIZATION", "CITY", "DATE"}),
    "round 19 fifth": ([
        ("married lives w/ wife zelda in thompson ct, retired machinist", [
            ("zelda", "PATIENT"), ("thompson", "CITY"), ("ct", "STATE")]),
        ("plan head ct. back to nh. abd ct w/ contrast\ns/p chest ct and head ct", []),
        ("Will f/u.\nA. Lindqvist, PT, DPT", [("A. Lindqvist", "DOCTOR")]),
    ], NAMES | {"CITY", "STATE"}),
    "round 19 sixth": ([
        ("FR LEAHEY FROM PASTORAL CARE IN\nchaplain fr hession | wife", [("LEAHEY", "PATIENT"), ("hession", "PATIENT")]),
        ("transferred fr home; call fr dtr; FR 40; pt fr rehab, fr boston", []),
        ("Their pastor, Fr. Thibodeaux", [("Thibodeaux", "PATIENT")]),
        ("sent to HFH ED 12/27 w/ fever; from OSH ED. to the Peds ED", [("HFH", "HOSPITAL"), ("12/27", "DATE")]),
    ], NAMES | {"HOSPITAL", "DATE"}),
    "round 19 dates": ([("hx pvd s/p fem-pop 10/00, DVT 4/00; BP 112/00", [("10/00", "DATE"), ("4/00", "DATE")])], {"DATE"}),
    "round 18": (ROUND18, NAMES | {"HOSPITAL", "ORGANIZATION"}),
    "round 18 dates": (ROUND18_DATES, {"DATE"}),
    "round 18 places": (ROUND18_PLACES, {"STREET", "CITY"}),
    "round 18 states": ([("MOTHER FROM HUDSON, N.H. AT BS; LIVES IN WINDHAM, N.Y.", [("N.H.", "STATE"), ("N.Y.", "STATE")])], {"STATE"}),
    "round 18 phones": (ROUND18_PHONES, {"PHONE"}),
    "round 18 abroad": (ROUND18_ABROAD, {"CITY"}),
    "round 18 uk": ([
        ("HOSP NO. Q1290447. COLLAPSED AT WORK 13/11; op 14/11; post CABG x3 (13/11/25)", [
            ("13/11", "DATE"), ("14/11", "DATE"), ("13/11/25", "DATE")]),
        ("on PS 16/5, fio2 40; pain 14/10; care 24/7; HR 110/60", []),
        ("LIVES IN JARROW, NE32 5QX. they live in fratton, po4 8jd. co2 5ml; po4 2mg", [
            ("JARROW", "CITY"), ("NE32 5QX", "ZIP"), ("po4 8jd", "ZIP")]),
        ("Reg aware, bleep 6605. NEUROSURG REG BLEEPED ON 5826 RE ICP 22", [("6605", "PHONE"), ("5826", "PHONE")]),
        ("TX FROM NITHSDALE INFIRMARY AFTER; adm via Wessex Vales NHS Trust", [
            ("NITHSDALE INFIRMARY", "HOSPITAL"), ("Wessex Vales NHS Trust", "HOSPITAL")]),
    ], {"DATE", "ZIP", "PHONE", "HOSPITAL", "CITY"}),
    "round 18 boston": ([
        ("dispo: Call out to floor, on list for Feldberg 7. Will; plan c/o to Reisman 7 today.", [
            ("Feldberg 7", "HOSPITAL"), ("Reisman 7", "HOSPITAL")]),
        ("back to Levo 2.5 mcg; c/o to 7 west", []),
        ("struck by a backing SUV in the Shaw's parking lot; Dr. Shaw's office", [("Shaw's", "ORGANIZATION")]),
    ], {"HOSPITAL", "ORGANIZATION"}),
    "round 18 canada": ([
        ("ADDRESS 4-3120 5TH AVE, PORT ALBERNI, B.C. V9Y 2G3. postal code l9h2v3.", [
            ("V9Y 2G3", "ZIP"), ("l9h2v3", "ZIP")]),
        ("GCS 11 (E3V3M5); gcs 14 (e4v4m6)", []),
        ("to or 12 nov w/ dr h; 2 may be; 5 dec in uop", [("12 nov", "DATE")]),
        ("BROUGHT HER A POPPY FOR REMEMBRANCE DAY.", [("REMEMBRANCE DAY", "DATE")]),
    ], {"DATE", "ZIP"}),
    "round 18 round 5 places": ([
        ("son came over from Ozark, Ala. this afternoon; FROM WAYNESBORO, MISS., ETA", [
            ("Ozark", "CITY"), ("Ala.", "STATE"), ("WAYNESBORO", "CITY"), ("MISS.", "STATE")]),
        ("AT A CO-OP IN REDFIELD, SD 4/22.", [("REDFIELD", "CITY"), ("SD", "STATE")]),
        ("LIVES IN LOWELL, MA 01852", [("LOWELL", "CITY")]),  # the zip's state is the zip rule's
        ("TRANSFERRED FROM OCONEE RIVER MEDICAL CENTER, DUBLIN. LKW 1730", [("DUBLIN", "CITY")]),
        ("HOME ADDRESS PO BOX 412; Mailing: HC 81 Box 240; box 3 of 5 checked", [
            ("PO BOX 412", "STREET"), ("HC 81 Box 240", "STREET")]),
    ], {"CITY", "STATE", "STREET"}),
    "round 18 ids": ([("INS: TRADITIONAL MEDICARE, MBI 1EG4-TE5-MK73.", [("1EG4-TE5-MK73", "IDNUM")]),
                      ("member of the family; member 2 of 3", [])], {"IDNUM"}),
    "round 18 ages": ([("sw, this rn.\npt is 91 (born dec 24 1933), turned", [("91", "AGE")]), ("pt is 95 (kg)", [])], {"AGE"}),
    "round 17": (ROUND17, NAMES | {"HOSPITAL", "ORGANIZATION"}),
    "round 17 states": (ROUND17_STATES, {"STATE"}),
    "round 16": (ROUND16, NAMES | ORGS | {"CITY"}),
    "round 16 dates": (ROUND16_DATES, {"DATE"}),
    "round 16 ages": (ROUND16_AGES, {"AGE"}),
    "round 15": (ROUND15, NAMES | ORGS),
    "round 15 roads": (ROUND15_ROADS, {"STREET"}),
    "round 15 dates": (ROUND15_DATES, {"DATE"}),
    "round 14": (ROUND14, NAMES | ORGS),
    "round 11": (ROUND11, NAMES | ORGS | {"AGE"}),
    "round 10": (ROUND10, NAMES | ORGS | {"STREET", "DATE", "PHONE"}),
    "round 9": (ROUND9, NAMES | ORGS | {"STREET"}),
    "round 9 towns": (ROUND9_TOWNS, {"CITY"}),
    "round 8": (ROUND8, NAMES | ORGS | {"DATE", "HEALTHPLAN", "IDNUM"}),
    "round 7": (ROUND7, NAMES | {"PHONE", "DATE", "ORGANIZATION"}),
    "round 6 names": (ROUND6_NAMES, NAMES),
    "round 6 places": (ROUND6_PLACES, ORGS | {"STREET", "ORGANIZATION"}),
    "round 6 dates": (ROUND6_DATES, {"DATE"}),
    "round 5 names": (ROUND5_NAMES, NAMES),
    "round 5 places": (ROUND5_PLACES, ORGS | {"STREET", "ORGANIZATION"}),
    "round 5 ages": (ROUND5_AGES, {"AGE"}),
    "round 4 names": (ROUND4_NAMES, NAMES),
    "round 4 places": (ROUND4_PLACES, ORGS | {"STREET", "ORGANIZATION"}),
    "round 4 dates": (ROUND4_DATES, {"DATE"}),
    "round 2 names": (ROUND2_NAMES, NAMES),
    "round 2 places": (ROUND2_PLACES, ORGS),
    "round 2 dates": (ROUND2_DATES, {"DATE"}),
    "titles": (TITLES, NAMES),
    "credentials": (CREDENTIALS_AND_ROLES, NAMES),
    "contacts": (CONTACTS, NAMES),
    "kin": (KIN, NAMES),
    "places": (FACILITIES_AND_PLACES, PLACES),
    "dates": (DATES, {"DATE"}),
    "phones": (PHONES, {"PHONE"}),
}
ROWS = [(family, text, expected) for family, (rows, _) in TABLES.items() for text, expected in rows]


@pytest.mark.parametrize(("family", "text", "expected"), ROWS)
def test_context_rules(rules: RuleSet, family: str, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(rules, text, TABLES[family][1]) == expected


@pytest.mark.parametrize(("family", "text", "expected"), ROWS)
def test_anchor_windows_find_what_a_full_scan_finds(rules: RuleSet, family: str, text: str, expected) -> None:
    assert rules.find(text) == rules.find(text, use_anchors=False)


# -- lexicons -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "kind"),
    [
        ("Smith", NAME), ("smith", NAME), ("NGUYEN", NAME), ("Xochitl", NAME),
        # names that are also English words need context
        ("Hope", AMBIGUOUS), ("Young", AMBIGUOUS), ("Baker", AMBIGUOUS), ("Hall", AMBIGUOUS),
        ("Brown", AMBIGUOUS), ("Mark", AMBIGUOUS),
        # never names: function words, modal verbs, clinical words and abbreviations
        ("will", STOP), ("May", STOP), ("pt", STOP), ("aware", STOP), ("cabg", STOP), ("Bill", AMBIGUOUS),
        ("morphine", STOP), ("bedside", STOP),
        ("stethoscope", COMMON), ("qwzx", UNKNOWN),
    ],
)
def test_lexicon_ambiguity(word: str, kind: str) -> None:
    assert load_lexicon("en").classify(word) == kind


def test_lexicons_are_sizeable_and_places_known() -> None:
    lexicon = load_lexicon("en")
    assert len(lexicon.last) > 80_000 and len(lexicon.first) > 5_000
    assert lexicon.is_place("Worcester") and lexicon.is_place("new york") and not lexicon.is_place("bedside")
    # ranks follow the Census frequency tables
    assert lexicon.last["smith"] < lexicon.last["nguyen"]


def test_lexicon_language_is_checked() -> None:
    with pytest.raises(UnsupportedFormat):
        load_lexicon("es")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hope to extubate. Will follow. May need rehab. Mark site. Bill sent.", []),
        ("Brown sputum. Young man at bedside. Hall monitor.", []),
        # "Hope" is ambiguous (a capital in a mixed-case line is enough); "will" is a
        # stop word, never a name: precision over the rare nurse called Will
        ("Spoke with Hope. Per Will, hold lasix.", [("Hope", "DOCTOR")]),
        ("SPOKE WITH HOPE. PER WILL, HOLD LASIX.", []),  # capitals hide the case clue
        ("Dr. Hope and Dr. Baker", [("Hope", "DOCTOR"), ("Baker", "DOCTOR")]),
    ],
)
def test_ambiguous_names_need_context(rules: RuleSet, text: str, expected) -> None:
    assert found(rules, text, NAMES) == expected


# -- glued tokens -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        ("dr.smith called", ["dr", ".", "smith", "called"]),
        ("DR.SMITH", ["DR", ".", "SMITH"]),
        ("pt's wife", ["pt", "'s", "wife"]),
        ("on 3/4-3/6 s/p", ["on", "3", "/", "4", "-", "3", "/", "6", "s", "/", "p"]),
        ("pg#12345", ["pg", "#", "12345"]),
        ("CABG '98", ["CABG", "'", "98"]),
        ("J.Smith RN", ["J", ".", "Smith", "RN"]),
    ],
)
def test_glued_forms_split_with_exact_offsets(text: str, pieces: list[str]) -> None:
    tokens = tokenize(text, "en").tokens
    assert [t.text for t in tokens] == pieces
    for t in tokens:
        assert text[t.start : t.end] == t.text


def test_glued_name_span_aligns_with_tokens(rules: RuleSet) -> None:
    text = "per dr.smith 3/4-3/6"
    spans = merge_spans(rules.find(text, standalone_only=True))
    starts = {t.start for t in tokenize(text, "en").tokens}
    ends = {t.end for t in tokenize(text, "en").tokens}
    got = [(text[s.start : s.end], s.label) for s in spans]
    assert ("smith", "DOCTOR") in got and ("3/4", "DATE") in got and ("3/6", "DATE") in got
    assert all(s.start in starts and s.end in ends for s in spans)


# -- the challenge set -------------------------------------------------------------------

CATEGORIES = {"clinician_name", "relative_name", "patient_surname", "facility", "place", "date", "phone", "other"}


@pytest.fixture(scope="module")
def challenge() -> list[Document]:
    return read_jsonl(CHALLENGE)


def test_challenge_set_shape(challenge: list[Document]) -> None:
    assert len(challenge) >= 60
    covered = set()
    for doc in challenge:
        categories = doc.meta["categories"]
        assert len(categories) == len(doc.spans) and set(categories) <= CATEGORIES
        covered.update(categories)
    assert covered >= CATEGORIES - {"other"}
    styles = " ".join(d.meta["style"] for d in challenge)
    for style in ("lower case", "all caps", "signature", "social work", "phone call", "radiology", "discharge"):
        assert style in styles


def rules_layer(rules: RuleSet, docs: list[Document]) -> list[Document]:
    filters = load_filters("en")
    return [
        Document(d.id, d.text, tuple(apply_filters(d.text, merge_spans(rules.find(d.text, standalone_only=True)), filters)))
        for d in docs
    ]


def _assert_floors(
    rules: RuleSet, docs: list[Document], *, recall: float, precision: float, per_category: dict[str, float]
) -> None:
    """The rules+lexicon layer's character recall and precision on ``docs``, and recall per category."""
    pred = rules_layer(rules, docs)
    scores = visible_char_prf(docs, pred)
    assert scores["recall"] >= recall
    assert scores["precision"] >= precision
    per = recall_per_category(docs, pred)
    for category, floor in per_category.items():
        assert per[category]["recall"] >= floor, (category, per[category])


def test_challenge_recall_floor_for_rules_and_lexicons(rules: RuleSet, challenge: list[Document]) -> None:
    """The rules+lexicon layer alone, on the fixed challenge set: a change that loses recall fails.

    Measured 0.9118 recall, 0.9932 precision (non-whitespace characters) when
    the floor was set; rules before issue 12 found 0.21.
    """
    _assert_floors(rules, challenge, recall=0.90, precision=0.97, per_category={
        "clinician_name": 0.95, "relative_name": 0.85, "patient_surname": 0.95, "date": 0.95,
        "phone": 0.97, "place": 0.80, "facility": 0.65})


def test_challenge_set_2_recall_floor_for_rules_and_lexicons(rules: RuleSet) -> None:
    """The rules+lexicon layer alone, on the second hand-written set (41 notes).

    Written and scored before any rule was changed for it: 0.7186 recall,
    0.9468 precision then (the starter: 0.8152 / 0.9613 at bias 0). After the
    second round of rules 0.9174 / 0.9809; the set is no longer held out, so
    this floor guards against regressions only.
    """
    docs = read_jsonl(CHALLENGE_2)
    assert len(docs) >= 40
    _assert_floors(rules, docs, recall=0.90, precision=0.96, per_category={
        "clinician_name": 0.97, "relative_name": 0.97, "patient_surname": 0.95, "date": 0.97,
        "phone": 0.97, "place": 0.80, "facility": 0.70})


def test_challenge_set_3_recall_floor_for_rules_and_lexicons(rules: RuleSet) -> None:
    """The rules+lexicon layer alone, on the third hand-written set (32 notes).

    Written and scored before any rule was changed for it: 0.7423 recall,
    0.9737 precision then (the starter: 0.8005 / 0.9565 at bias 0). After the
    credential, procedure-role and facility-word rules 0.8224 / 0.9762; the set
    is no longer held out, so this floor guards against regressions only.
    """
    docs = read_jsonl(CHALLENGE_3)
    assert len(docs) >= 30
    _assert_floors(rules, docs, recall=0.80, precision=0.96, per_category={
        "clinician_name": 0.95, "relative_name": 0.97, "patient_surname": 0.95, "date": 0.97,
        "phone": 0.97, "place": 0.90, "facility": 0.45})


def test_challenge_set_4_recall_floor_for_rules_and_lexicons(rules: RuleSet) -> None:
    """The rules+lexicon layer alone, on the fourth hand-written set (28 notes).

    Scored before any rule was changed for it: 0.6933 recall, 0.9844
    precision. After the fourth round (written against its misses) 0.812 /
    0.989; the set is no longer held out, so this floor guards against
    regressions only.
    """
    docs = read_jsonl(CHALLENGE_4)
    assert len(docs) >= 28
    _assert_floors(rules, docs, recall=0.80, precision=0.97, per_category={
        "clinician_name": 0.98, "relative_name": 0.97, "date": 0.97, "phone": 0.97, "place": 0.97,
        "facility": 0.50})


def test_visible_chars_ignore_whitespace() -> None:
    gold = [Document("a", "Jane  Smith x", (Span(0, 11, "PATIENT"),))]
    split = [Document("a", "Jane  Smith x", (Span(0, 4, "PATIENT"), Span(6, 11, "PATIENT")))]
    scores = visible_char_prf(gold, split)
    assert scores["recall"] == 1.0 and scores["precision"] == 1.0 and scores["gold_chars"] == 9
    half = [Document("a", "Jane  Smith x", (Span(0, 4, "PATIENT"), Span(12, 13, "PATIENT")))]
    scores = visible_char_prf(gold, half)
    assert scores["overlap_chars"] == 4 and scores["pred_chars"] == 5


# -- literal anchors with word-edge marks ------------------------------------------------


def test_anchor_edge_marks_keep_only_word_hits() -> None:
    from deid_core.engine.rules import Rule, anchor_windows

    text = "drug address; dr smith; Dr. Jones"
    windows = anchor_windows(text, ("\\bdr\\b",), 0, 10)
    hit_words = [text[a:b] for a, b in windows]
    assert all("drug" not in w and "address" not in w for w in hit_words)
    rule = Rule("t", "DOCTOR", r"(?i:\bdr\b\.?\s+)(\w+)", group=1, anchor=("\\bdr\\b",), window=(0, 12))
    rules = RuleSet([rule])
    assert [text[s.start : s.end] for s in rules.find(text)] == ["smith", "Jones"]
    assert rules.find(text) == rules.find(text, use_anchors=False)


def test_anchor_edge_marks_alone_are_an_error() -> None:
    from deid_core.engine.rules import Rule
    from deid_core.errors import RuleError

    with pytest.raises(RuleError, match="edge marks"):
        Rule("t", "DOCTOR", r"dr", anchor=("\\b",))


def test_a_credential_is_no_state_after_a_city(rules: RuleSet) -> None:
    """ "Brittany Morris, MD" once gave a CITY match on "Morris" (MD read as Maryland).

    The merge hides it behind the DOCTOR span, but the CRF sees every rule match
    as a feature, and 250 such matches on the starter's training notes kept the
    place rules from ever being trusted.
    """
    for text in ("Brittany Morris, MD", "cc: Price, PA", "Kim Young, DO"):
        assert not [s for s in rules.find(text, standalone_only=False) if s.label in {"CITY", "STATE"}], text
    assert [text for text in ["Hartford, CT"] if any(s.label == "CITY" for s in rules.find(text))]


def test_day_count_filter_spares_a_contraction(rules: RuleSet) -> None:
    """ "abx day 7/14" counts days of a course; the d of "dc'd 11/30" is no day."""
    text = "pt dc'd 11/30. abx day 7/14, d 3/5 of zosyn"
    spans = apply_filters(text, merge_spans(rules.find(text, standalone_only=True)), load_filters("en"))
    assert [text[s.start : s.end] for s in spans if s.label == "DATE"] == ["11/30"]
