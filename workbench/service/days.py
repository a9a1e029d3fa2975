"""Day counts given by users (windows, cooldowns, snoozes): whole numbers in range, or a clear
error. Its own module so every feature can check days without importing another feature."""

from __future__ import annotations

from ..errors import UserError

MAX_DAYS = 36_500  # a hundred years: anything larger is a typo, and overflows date arithmetic


def check_days(value, param: str = "days", *, allow_zero: bool = False) -> int:
    """A day count from a user: a whole number in range, or a clear error (never an overflow)."""
    what = "the cooldown" if param == "cooldown_days" else "the number of days"
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{what} must be a whole number of days, not {value!r}", param=param)
    low = 0 if allow_zero else 1
    if not low <= value <= MAX_DAYS:
        raise UserError(f"{what} must be between {low} and {MAX_DAYS} days (got {value})", param=param)
    return value
