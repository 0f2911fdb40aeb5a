"""Sign-in throttling: exponential back-off per username and per client, then a lockout.

Every attempt is a row in ``login_attempts`` (username, client, time, outcome;
never the password). Before a password is even checked:

- **lockout**: ``lockout_failures`` failures within ``window_s`` for the
  username, or for the client, refuse every attempt (the right password
  too) until ``lockout_s`` after the last failure;
- **back-off**: after ``free_failures`` consecutive failures the next
  attempt must wait ``base_delay_s * 2**(n - free_failures - 1)`` seconds,
  at most ``max_delay_s``, counted per username and per client.

A success clears the username's count (failures before it no longer count).
The settings live in ``store_settings`` and change only through
``set_throttle_settings`` by an admin, audited; lockouts are audited too.
The log names the username and client of every failure, never the password.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.engine import Engine

from deid_core.errors import StoreError, TooManyAttempts
from deid_core.store.audit import record_event
from deid_core.store.authz import SYSTEM, Actor, check
from deid_core.store.engine import read_session, write_session
from deid_core.store.models import LoginAttempt, StoreSetting, utcnow
from deid_core.store.users import UserInfo, authenticate

log = logging.getLogger("deid_core.store.throttle")
SETTINGS_KEY = "login_throttle"


@dataclass(frozen=True, slots=True)
class ThrottleSettings:
    free_failures: int = 2
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    lockout_failures: int = 10
    window_s: float = 900.0
    lockout_s: float = 900.0

    def check(self) -> None:
        if self.free_failures < 0 or self.lockout_failures < 1:
            raise StoreError("free_failures must be >= 0 and lockout_failures >= 1")
        if min(self.base_delay_s, self.max_delay_s, self.window_s, self.lockout_s) < 0:
            raise StoreError("throttle delays and windows must not be negative")

    def delay(self, consecutive_failures: int) -> float:
        over = consecutive_failures - self.free_failures
        if over <= 0:
            return 0.0
        return min(self.max_delay_s, self.base_delay_s * 2 ** min(over - 1, 30))


def throttle_settings(engine: Engine) -> ThrottleSettings:
    with read_session(engine) as s:
        row = s.get(StoreSetting, SETTINGS_KEY)
        raw = dict(row.value) if row is not None else {}
    known = {f.name for f in fields(ThrottleSettings)}
    return ThrottleSettings(**{k: v for k, v in raw.items() if k in known})


def set_throttle_settings(engine: Engine, updates: dict[str, Any], *, actor: Actor = SYSTEM) -> ThrottleSettings:
    """Change the throttle settings (admins only, audited)."""
    known = {f.name for f in fields(ThrottleSettings)}
    unknown = sorted(set(updates) - known)
    if unknown:
        raise StoreError(f"unknown throttle settings {unknown}: use {sorted(known)}")
    with write_session(engine) as s:
        who = check(s, actor, "admin", "change sign-in throttling")
        row = s.get(StoreSetting, SETTINGS_KEY)
        before = dict(row.value) if row is not None else {}
        merged = ThrottleSettings(**{**asdict(ThrottleSettings()), **before, **updates})
        merged.check()
        after = asdict(merged)
        if row is None:
            s.add(StoreSetting(key=SETTINGS_KEY, value=after, updated_at=utcnow()))
        else:
            row.value, row.updated_at = after, utcnow()
        record_event(s, who, "settings.login_throttle", "store", SETTINGS_KEY,
                     before=before or None, after=after)
    return merged


def _state(s: Any, column: Any, key: str, since: datetime) -> tuple[int, int, datetime | None]:
    """(failures in window, consecutive failures since the last success, last failure time)."""
    last_ok = s.scalar(select(func.max(LoginAttempt.at)).where(
        column == key, LoginAttempt.success.is_(True)))
    floor = max(since, _aware(last_ok)) if last_ok is not None else since
    n, last = s.execute(select(func.count(), func.max(LoginAttempt.at)).where(
        column == key, LoginAttempt.success.is_(False), LoginAttempt.at > floor)).one()
    in_window = s.scalar(select(func.count()).select_from(LoginAttempt).where(
        column == key, LoginAttempt.success.is_(False), LoginAttempt.at > since)) or 0
    return int(in_window), int(n or 0), _aware(last)


def _aware(dt: datetime | None) -> datetime | None:
    if dt is not None and dt.tzinfo is None:
        return dt.replace(tzinfo=timezone.utc)
    return dt


def _wait(settings: ThrottleSettings, now: datetime, in_window: int, consecutive: int,
          last: datetime | None) -> tuple[float, bool]:
    """(seconds to wait, locked) for one key."""
    if last is None:
        return 0.0, False
    if in_window >= settings.lockout_failures:
        left = (last + timedelta(seconds=settings.lockout_s) - now).total_seconds()
        if left > 0:
            return left, True
    left = (last + timedelta(seconds=settings.delay(consecutive)) - now).total_seconds()
    return max(0.0, left), False


def sign_in(
    engine: Engine, username: str, password: str, *, client: object = "unknown",
    now: datetime | None = None,
) -> UserInfo | None:
    """``authenticate`` behind the throttle: the user, ``None`` for a wrong password or a
    deactivated account, or ``TooManyAttempts`` (``E_THROTTLED``) without checking it."""
    settings = throttle_settings(engine)
    at = now or utcnow()
    name = username[:100]
    client = str(client or "unknown")[:100]
    since = at - timedelta(seconds=settings.window_s)
    with read_session(engine) as s:
        user_state = _state(s, LoginAttempt.username, name, since)
        client_state = _state(s, LoginAttempt.client, client, since)
    wait_user, locked_user = _wait(settings, at, *user_state)
    wait_client, locked_client = _wait(settings, at, *client_state)
    wait = max(wait_user, wait_client)
    if wait > 0:
        locked = locked_user or locked_client
        log.warning("sign-in refused for username %r from client %s: %s, %.0f s left",
                    name, client, "locked out" if locked else "backing off", wait)
        what = ("too many failed sign-ins: locked for" if locked
                else "too many failed sign-ins: try again in")
        raise TooManyAttempts(f"{what} {wait:.0f} s", retry_after=wait)
    info = authenticate(engine, username, password)
    with write_session(engine) as s:
        s.execute(insert(LoginAttempt), [{"at": at, "username": name, "client": client,
                                          "success": info is not None}])
        if info is None:
            for kind, key, state in (("user", name, user_state), ("client", client, client_state)):
                # This failure is the one that reaches the lockout threshold: audit it once.
                if state[0] + 1 == settings.lockout_failures:
                    record_event(s, name, "login.lockout", kind, key,
                                 after={"username": name, "client": client,
                                        "failures": settings.lockout_failures,
                                        "window_s": settings.window_s,
                                        "lockout_s": settings.lockout_s})
    if info is None:
        log.warning("failed sign-in for username %r from client %s", name, client)
    else:
        log.info("user %r signed in from client %s", info.username, client)
    return info
