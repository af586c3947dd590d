"""The one rule for secrets in what the pack shows: every URL or URI that goes into an error, a log line, a
progress line or a JSON output goes through :func:`redact_url` (one URL) or :func:`redact_text` (any text that
may hold URLs). The userinfo (``user:password@``) becomes ``***@``, and the value of every query or fragment
parameter whose name suggests a secret (``key``, ``token``, ``secret``, ``sig``, ``password``, ``auth``,
``session``, ... anywhere in the name, any case: ``client_secret``, ``X-Amz-Signature``) becomes ``***``.

Example:

```python
redact_url("bolt://neo4j:hunter2@db:7687")                       # 'bolt://***@db:7687'
redact_url("http://h/v1?api-version=1&client_secret=s3")         # 'http://h/v1?api-version=1&client_secret=***'
redact_text("cannot reach http://h/v1?sig=abc (refused)")        # 'cannot reach http://h/v1?sig=*** (refused)'
```
"""

from __future__ import annotations

import logging
import re

PLACEHOLDER = "***"

#: parts of a parameter name that mark its value as a secret (matched anywhere in the name, any case)
_SECRET_NAME = re.compile(
    r"key|token|secret|sig|passw|pwd|passphrase|auth|credential|session|cookie|bearer|jwt|private",
    re.IGNORECASE,
)
#: ``scheme://...`` up to a space, a quote, a bracket of prose or a backslash
_URL = re.compile(r"""\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'"<>(){}\\`]+""")
#: ``name=value`` pairs of a query or fragment (``&`` or ``;`` between them)
_PAIR = re.compile(r"(?P<name>[^=&;#?]*)=(?P<value>[^&;#]*)")


def is_secret_name(name: str) -> bool:
    """True when a parameter called ``name`` probably holds a secret (``api_key``, ``X-Amz-Signature``, ...)."""
    from urllib.parse import unquote_plus

    return bool(_SECRET_NAME.search(unquote_plus(name)))


def _redact_pairs(part: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = match["name"]
        return f"{name}={PLACEHOLDER}" if is_secret_name(name) and match["value"] else match[0]

    return _PAIR.sub(value, part)


def redact_url(url: str) -> str:
    """``url`` with its userinfo and the values of its secret-named parameters replaced by ``***`` (the rest, and
    a string that is not a URL, as given)."""
    text = str(url)
    scheme, sep, rest = text.partition("://")
    if not sep:
        return text
    # the userinfo ends at the last "@" before the query (a password may hold an unescaped "/"); none without a
    # host (ladybug:///home/me@example.org/kg.lbug)
    before_query = re.split(r"[?#]", rest, maxsplit=1)[0]
    userinfo = "@" in before_query and not rest.startswith("/")
    if userinfo:
        rest = rest[before_query.rindex("@") + 1 :]
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    if userinfo:
        authority = f"{PLACEHOLDER}@{authority}"
    path, hash_, fragment = tail.partition("#")
    path, qmark, query = path.partition("?")
    return f"{scheme}://{authority}{path}{qmark}{_redact_pairs(query)}{hash_}{_redact_pairs(fragment)}"


def redact_text(text: object) -> str:
    """``str(text)`` with every ``scheme://...`` in it passed through :func:`redact_url`."""
    return _URL.sub(lambda match: redact_url(match[0]), str(text))


def recordable(spec: str | None) -> str | None:
    """``spec`` (a model spec or store URI) to record in ``ingest.json``: None when it holds a secret that
    redaction would hide (the command that reads it back asks for it again)."""
    return spec if spec is None or redact_text(spec) == spec else None


class _RedactingFilter(logging.Filter):
    """Formats each record of a logger of the pack once, through :func:`redact_text`."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed call: reported by the handler, as without the filter
            return True
        redacted = redact_text(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


_FILTER = _RedactingFilter()


def get_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` whose records are redacted (every module of the pack logs through one)."""
    logger = logging.getLogger(name)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    return logger
