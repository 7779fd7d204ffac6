"""Communication-group ids: the `@<number>` suffix of CANN op names is `double_hash(group id)`."""

from __future__ import annotations


def double_hash(s: str) -> int:
    """The hash torch_npu/CANN put after `@` in communication op names (ascend_modern_formats.md §3)."""
    h0 = h1 = 0
    for ch in str(s):
        h0 = (h0 * 29 + ord(ch)) & 0xFFFFFFFF
        h1 = (h1 * 131 + ord(ch)) & 0xFFFFFFFF
    return (h0 << 32) | h1
