"""Content-Security-Policy helpers for the report's pages (the policy itself is in the templates' <head>).

Pages are opened from disk, e-mailed and shared: the policy forbids every network load (`default-src 'none'`) and
inline event handlers. Scripts and styles come only from the report's own files (site mode: `'self'`) or, in the
single file, from the inline blocks whose sha256 hashes `csp_hash` computes. Register it as a Jinja filter
(`env.filters["csp_hash"] = csp_hash`); the templates fall back to a weaker policy (still no network) without it.
"""

from __future__ import annotations

import base64
import hashlib


def csp_hash(text: object) -> str:
    """The CSP source expression (`'sha256-…'`) for an inline <script>/<style> whose content is exactly `text`."""
    digest = hashlib.sha256(str(text).encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"
