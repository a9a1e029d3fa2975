"""The project's own secret rules and the judgement calls the detector leaves to us.

``secrets.py`` runs detect-secrets; this module holds what detect-secrets does not do (or does
only for files of one type) and the filters that keep documentation from tripping the guard:

* rules for formats detect-secrets 1.5 lacks (Google API keys, fine-grained GitHub tokens,
  encrypted PKCS#8 keys, unquoted AWS secrets, passwords with reserved characters in URLs);
* assignments with an unquoted value (``export PGPASSWORD=...``, ``token = 3f7a...``,
  ``password: s3cr3t!`` in YAML), which detect-secrets only finds in files it knows are config;
* placeholders (``<password>``, ``${DB_PASSWORD}``, ``changeme``, ``xxxx``...), references
  (``$VAR``, ``os.environ[...]``, ``settings.db_password``) and names that describe a secret
  without holding one (``secret_name``, ``password_file``, ``token_url``, ``public_key``).

Pure: strings in, booleans and matches out. No detect-secrets import here.
"""

from __future__ import annotations

import math
import re

# -- rules for formats detect-secrets does not cover -------------------------------------
# Each pattern stays on one line (no \s, no unbounded negated classes) because it also runs
# over the whole normalised text. A group named ``v`` marks the secret inside the match.

OWN_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private key", re.compile(r"-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----")),
    ("AWS secret access key", re.compile(
        r"aws_?secret_?access_?key[\"']?[ \t]*[:=][ \t]*[\"']?(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])", re.IGNORECASE)),
    ("Google API key", re.compile(r"AIza[0-9A-Za-z_\-]{35}")),
    ("GitHub token", re.compile(r"github_pat_[A-Za-z0-9_]{22,}")),
    ("Slack token", re.compile(r"xox[abposre]-[A-Za-z0-9-]{10,}")),
    ("Stripe secret key", re.compile(r"[rs]k_live_[0-9A-Za-z]{20,}")),
    # like detect-secrets' basic-auth rule, but the password may hold reserved characters (p@ss!)
    ("password in a connection string", re.compile(r"://[^\s:/@'\"]{1,100}:(?P<v>[^\s/'\"]{3,200})@[^\s@'\"]")),
)

# -- assignments -----------------------------------------------------------------------------

# Lines that do not contain one of these (any case) cannot hold a keyword or assignment finding:
# it covers every keyword of detect-secrets' KeywordDetector and every word of ``name_kind``.
HINT_WORDS = ("pass", "pw", "secret", "token", "key", "auth", "cred", "bearer", "contrase", "dsn")
ASSIGNMENT_HINT = re.compile("|".join(HINT_WORDS), re.IGNORECASE)

# An identifier that may name a secret, then ``= value``, ``: value``, ``:= value``, with an
# optional quote around the name or the value. ``tight`` is set when the value follows '=' with
# no space (shell, .env, ini, query strings, ADO connection strings): strong context.
NAME = re.compile(r"[A-Za-z_ñÑ][\w.-]{0,80}")
ASSIGNED = re.compile(
    r"[\"'\]]?(?:(?P<tight>=)|[ \t]*(?::=|=>|==?|:)[ \t]*)"
    r"(?P<q>[\"'`]?)(?P<v>[^\s\"'`,;&)}\]]{1,300})(?P=q)")

_PASSWORD_WORDS = {"pass", "passwd", "password", "passwords", "pwd", "passphrase", "pw", "passcode",
                   "contrasena", "contraseña", "pgpassword", "pgpass", "mysqlpwd"}
_SECRET_WORDS = {"secret", "secrets", "token", "tokens", "auth", "credential", "credentials", "creds",
                 "cred", "bearer", "apikey", "apitoken", "accesstoken", "authtoken", "privatekey",
                 "secretkey", "clientsecret", "dsn"}
# "key" alone is everywhere (cache keys, sort keys, public keys); only these make it a secret.
_SECRET_KEY_QUALIFIERS = {"api", "access", "secret", "private", "signing", "sign", "encryption", "enc",
                          "client", "master", "account", "service", "app", "auth", "db", "database",
                          "hmac", "webhook", "session", "jwt", "license", "admin", "root", "deploy",
                          "integration", "x", "psp", "stripe", "storage", "shared"}
# Last word of a name that makes it about a secret rather than the secret itself.
_NAME_QUALIFIERS = {
    "id", "ids", "name", "names", "file", "files", "path", "paths", "dir", "env", "var", "vars", "ref",
    "reference", "arn", "url", "uri", "endpoint", "host", "header", "field", "param", "length", "len",
    "min", "max", "policy", "policies", "type", "kind", "mode", "method", "algorithm", "algo", "hash",
    "hashed", "hasher", "digest", "salt", "rounds", "authentication", "prompt", "label", "description",
    "version", "rotation", "ttl", "expiry", "expires", "lifetime", "age", "count", "attempts",
    "enabled", "required", "manager", "store", "provider", "source", "backend", "engine", "location",
    "format", "scheme", "pattern", "regex", "placeholder", "template", "hint", "reset", "changed",
    "updated", "created", "rotated", "mount", "volume", "role", "roles", "scope", "scopes", "size",
    "bits", "usage", "fingerprint", "issuer", "audience", "limit", "timeout", "interval", "index",
    "prefix", "suffix", "column", "table", "stdin", "command", "cmd", "validation", "validator",
}
_NEGATING_WORDS = {"public", "pub", "cache", "sort", "partition", "primary", "foreign", "idempotency",
                   "routing", "dedup", "lookup", "object", "next", "page", "csrf", "xsrf", "no", "without"}


def name_words(name: str) -> list[str]:
    """``DB_PASSWORD`` -> [db, password]; ``secretName`` -> [secret, name]; ``api-key`` -> [api, key]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9ñÑ]+", spaced.lower()) if w]


def name_kind(name: str) -> str | None:
    """The finding kind an assignment to ``name`` would be, or None when the name holds no secret."""
    words = name_words(name)
    if not words or words[-1] in _NAME_QUALIFIERS or _NEGATING_WORDS.intersection(words) or \
            name.lstrip("$") in ("PWD", "OLDPWD"):              # the shell's working directory
        return None
    if any(w in _PASSWORD_WORDS or w.endswith(("password", "passwd")) for w in words):
        return "password assignment"
    if any(w in _SECRET_WORDS or w.endswith(("token", "secret", "apikey")) for w in words):
        return "secret assignment"
    for before, word in zip(["", *words], words):
        if word == "key" and before in _SECRET_KEY_QUALIFIERS:
            return "secret assignment"
    return None


# -- values ------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(
    r"^(?:<.*>?|\{.*\}?|\[.*\]|\$.*|%\([\w-]*\)s|%[\w-]+%|@\w+@|#\{.*\}|\*+|x+|\.+|-+|_+|redacted|changeme|change_?me|"
    r"change-me|example\w*|sample\w*|password\d?|passw0rd|pass|passwd|pwd|secret|token|api[-_]?key|key|user(?:name)?|"
    r"admin|guest|demo|placeholder|1password|lastpass|bitwarden|keepass|vault|none|null|nil|true|false|empty|"
    r"hidden|masked|omitted|required|optional|todo|tbd|foo|bar|baz|foobar|qux|abc|abc123|123456\d*|"
    r"your[-_].*|my[-_].*|my(?:secret|password|token|key).*|xxx.*|dummy.*|fake.*|test.*|insert.*|replace.*|"
    r"enter[-_].*|put[-_].*|some[-_]?(?:secret|password|token|key).*|(?:secret|password|token|key)[-_]?here)$",
    re.IGNORECASE)
_REFERENCE = re.compile(
    r"^(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[A-Za-z_][\w.]*[(\[].*|(?:https?|file|vault|ssm|arn|ref\+\w+)[:].*|"
    r"@?[./~]?/.*|@-|![\w/!]+|(?:true|false|yes|no|on|off|null|none)|\d+(?:\.\d+)*[a-z]{0,3})$", re.IGNORECASE)
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*_[A-Z0-9_]+")
_ELLIPSIS = re.compile(r"\.\.\.|…")


def is_placeholder(value: str) -> bool:
    """Documentation stand-ins: templated, masked, elided, or one character repeated."""
    value = value.strip()
    if len(value) < 3 or _PLACEHOLDER.match(value) or _ELLIPSIS.search(value):
        return True
    if value.startswith(("https://", "http://")):           # a URL: judge its secret last segment
        return is_placeholder(value.rstrip("/").rsplit("/", 1)[-1])
    # xxxx / 0000 runs padding a known prefix (ghp_xxxx..., AKIAXXXXXXXXXXXXXXXX)
    top = max(value.count(c) for c in set(value))
    return len(value) >= 8 and top / len(value) >= 0.6


_PATH = re.compile(r"(?:@|file://)?(?:~|\.{1,2})?/[\w.@%+-]*(?:/[\w.@%+-]*)*")


def is_path(value: str) -> bool:
    """``/run/secrets/db``, ``./token.txt``, ``~/.pgpass``: where a secret is, not what it is."""
    return bool(_PATH.fullmatch(value))


def is_reference(value: str) -> bool:
    """An unquoted value naming where the secret lives rather than holding it."""
    return bool(_REFERENCE.match(value) or _ENV_NAME.fullmatch(value))


def shannon(value: str) -> float:
    if not value:
        return 0.0
    n = len(value)
    return -sum((c / n) * math.log2(c / n) for c in (value.count(ch) for ch in set(value)))


_HEX = re.compile(r"[0-9a-fA-F]+")


def is_hex(value: str) -> bool:
    return bool(_HEX.fullmatch(value))

_STRONG_SYMBOL = re.compile(r"[!@#$%^&*+=?~|<>]")


def token_shaped(value: str) -> bool:
    """Random-looking enough to be a token: long hex, or long mixed letters and digits."""
    if _HEX.fullmatch(value):
        return len(value) >= 32 and not value.isdigit() and shannon(value) > 3.0
    return (len(value) >= 20 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
            and shannon(value) > 3.5)


def password_shaped(value: str, *, tight: bool) -> bool:
    """Could this unquoted value be a password? ``tight`` (``NAME=value``) is strong context."""
    if tight:
        return len(value) >= 4 and not value.isdigit() or len(value) >= 6
    has_letter = any(c.isalpha() for c in value)
    has_digit = any(c.isdigit() for c in value)
    return len(value) >= 6 and has_letter and (has_digit or bool(_STRONG_SYMBOL.search(value)))


# the key right before a value: ``commit: "``, ``"sha": "``, ``rev = '``, ``checksum=(``
_GIT_CONTEXT = re.compile(r"(?i)(?<![a-z])(?:commit|sha\d*|rev|revision|ref|hash|digest|checksum|md5|etag|fingerprint|"
                          r"tree|parent|blob|object|oid|id|uuid|build|version|integrity)[\w-]*[\"'\]]?[ \t]*"
                          r"(?:[:=]|=>|==)?[ \t]*[(\[]?$")


def looks_like_git_or_digest(value: str, before: str) -> bool:
    """A hex string keyed as a commit, hash, digest or id (``commit: "3f9a..."``), or a
    subresource-integrity digest (``"sha384-..."``)."""
    if value.startswith(("sha1-", "sha256-", "sha384-", "sha512-")):
        return True
    return is_hex(value) and bool(_GIT_CONTEXT.search(before[-60:].rstrip("\"'`")))


# ``Authorization: Bearer <token>``, ``Authorization: token <token>``, ``Authorization: Basic <b64>``
AUTH_HEADER = re.compile(r"\b(?P<scheme>[Bb]earer|[Bb]asic|[Tt]oken)[ \t]+(?P<v>[A-Za-z0-9._~+/-]{8,}=*)")


def basic_credentials(value: str) -> bool:
    """``user:password`` once base64-decoded."""
    import base64
    import binascii

    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    user, sep, password = decoded.partition(":")
    return bool(sep and user and len(password) >= 3 and decoded.isprintable() and not is_placeholder(password))
