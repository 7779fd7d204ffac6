"""Fuzz set C: a second, independent mutation generator (issue 30, "an independent set you have not tuned on").

Written apart from sets A and B of `test_fuzz.py`, with other operators, other values, another seed and other
targets (the family's third copy where there is one), and applied to bases A and B never see: small real traces
from other teams (`samples/external`: a CPU-only gloo Kineto trace, torch_npu and msprof SQLite exports) and
synthetic runs made with other shapes (3 ranks, another seed). Every operator makes a value that is impossible for
the field it lands in, or a structure the writer never writes -- never a plausible value (a duration of 5 ms
instead of 7 ms is not damage anyone could see):

* JSON (`k_`): a tiny negative (-0.001), an empty string, an object, 1e300 (finite but beyond any real quantity),
  a fraction in a whole-number field (counts, ids, ranks, steps), a key written in upper case, an entry of a list
  of objects replaced by null or by a string;
* CSV (`d_`): a number with its unit glued on ("12.5ms"), a tiny negative, a fraction in a whole-number column, a
  decimal comma ("12,5"), a header written in upper case, the first data row twice, the header line repeated
  mid-file, a table of empty rows (",,,"). (Not an empty cell or "-": the writers leave those themselves on rows
  with no value -- operator_memory's unreleased blocks, the data pipeline's root operator -- so they are not
  damage anyone could see);
* SQLite (`q_`): a number made negative, NULL or text in a table's numeric column, every row of a table deleted;
* a trace compressed with gzip is mutated inside its compression.

Each bytes-level operator takes (data, rng) and returns the damaged bytes or None (not applicable).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import random
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Optional

SEED_C = 7321
WHOLE_KEY = re.compile(r"(count|occurr|num$|num_|^n_|rank|step|_id$|^id$|index|frequency|times$)", re.I)
DURATIONISH = re.compile(r"dur|time|elapse|cost|ts$|stamp|ratio|percent|util|%|bandwidth|size|mb|kb|bytes", re.I)

REAL_BASES_C = {  # name -> sample folder (copied; used when present)
    "ext_gloo_cpu": "external/hta_cpu_only_gloo_rank34",
    "ext_npu_db": "external/msinsight_pytorch_2rank_level0_db",
    "ext_msprof_db": "external/msinsight_msprof_db_single",
}
SYNTH_BASES_C = {  # other shapes than sets A / B: 3 ranks, seed 11
    "synthC_ascend": dict(layout="ascend", trace_view=True),
    "synthC_kineto": dict(layout="kineto"),
    "synthC_mindspore_gpu": dict(layout="mindspore_gpu"),
    "synthC_mindinsight": dict(layout="mindinsight"),
}

JSON_OPS = ["k_tiny_negative", "k_empty_string", "k_object", "k_1e300", "k_fraction", "k_key_upper",
            "k_null_entry", "k_string_entry"]
CSV_OPS = ["d_unit", "d_tiny_negative", "d_fraction", "d_decimal_comma", "d_header_upper", "d_dup_first_row",
           "d_second_header", "d_comma_rows"]
DB_OPS = ["q_negative", "q_null", "q_text", "q_empty_table"]
MUTATIONS_C = JSON_OPS + CSV_OPS + DB_OPS
CLASS_C = {
    "k_tiny_negative": "impossible values", "k_1e300": "impossible values", "k_fraction": "impossible values",
    "d_tiny_negative": "impossible values", "d_fraction": "impossible values", "d_unit": "schema drift",
    "d_decimal_comma": "schema drift", "q_negative": "impossible values", "q_null": "impossible values",
    "q_text": "impossible values",
    "k_empty_string": "schema drift", "k_object": "schema drift", "k_key_upper": "schema drift",
    "k_null_entry": "schema drift", "k_string_entry": "schema drift", "d_header_upper": "schema drift",
    "d_second_header": "schema drift",
    "d_dup_first_row": "duplicates and conflicts",
    "d_comma_rows": "present but empty", "q_empty_table": "present but empty",
}


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _slots(doc) -> list[tuple[tuple, object, object]]:
    out, stack = [], [(doc, ())]
    while stack and len(out) < 300_000:
        cur, pth = stack.pop()
        items = cur.items() if isinstance(cur, dict) else enumerate(cur) if isinstance(cur, list) else ()
        for k, x in items:
            out.append((pth, k, x))
            if isinstance(x, (dict, list)):
                stack.append((x, pth + (k,)))
    return out


def _get(doc, pth):
    for k in pth:
        doc = doc[k]
    return doc


def mutate_json(data: bytes, op: str, rng: random.Random) -> Optional[bytes]:
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(doc, (dict, list)):
        return None
    slots = _slots(doc)
    nums = [(p, k) for p, k, x in slots if _num(x) and x > 0]
    if op in ("k_tiny_negative", "k_empty_string", "k_object", "k_1e300"):
        if not nums:
            return None
        p, k = rng.choice(nums)
        parent = _get(doc, p)
        parent[k] = {"k_tiny_negative": -0.001, "k_empty_string": "", "k_object": {"value": parent[k]},
                     "k_1e300": 1e300}[op]
    elif op == "k_fraction":
        pool = [(p, k) for p, k in nums if isinstance(k, str) and WHOLE_KEY.search(k) and not DURATIONISH.search(k)
                and isinstance(_get(doc, p)[k], int)]
        if not pool:
            return None
        p, k = rng.choice(pool)
        _get(doc, p)[k] = _get(doc, p)[k] + 0.25
    elif op == "k_key_upper":
        pool = [(p, k) for p, k, x in slots if isinstance(k, str) and k != k.upper() and (_num(x) or isinstance(x, str))]
        if not pool:
            return None
        p, k = rng.choice(pool)
        parent = _get(doc, p)
        if k.upper() in parent:
            return None
        parent[k.upper()] = parent.pop(k)
    elif op in ("k_null_entry", "k_string_entry"):
        pool = [(p, k) for p, k, x in slots if isinstance(x, dict) and isinstance(k, int)]
        if isinstance(doc, list):
            pool += [((), i) for i, x in enumerate(doc) if isinstance(x, dict)]
        if not pool:
            return None
        p, k = rng.choice(pool)
        _get(doc, p)[k] = None if op == "k_null_entry" else "entry"
    else:
        return None
    return json.dumps(doc, indent=1).encode("utf-8")


def _rows(data: bytes) -> Optional[list[list[str]]]:
    try:
        rows = [r for r in csv.reader(io.StringIO(data.decode("utf-8-sig")))]
    except (UnicodeDecodeError, csv.Error):
        return None
    rows = [r for r in rows if r]
    return rows if len(rows) >= 2 else None


def _bytes(rows: list[list[str]]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerows(rows)  # (CRLF: another writer than sets A / B)
    return buf.getvalue().encode("utf-8")


def _cells(rows, test=lambda h, v: True) -> list[tuple[int, int]]:
    out = []
    for i, r in enumerate(rows[1:], 1):
        for j, c in enumerate(r[: len(rows[0])]):
            try:
                v = float(c)
            except ValueError:
                continue
            if math.isfinite(v) and v > 0 and test(rows[0][j], c):
                out.append((i, j))
    return out


def mutate_csv(data: bytes, op: str, rng: random.Random) -> Optional[bytes]:
    rows = _rows(data)
    if rows is None:
        return None
    head = rows[0]
    if op in ("d_unit", "d_tiny_negative", "d_decimal_comma"):
        cells = _cells(rows)
        if not cells:
            return None
        i, j = rng.choice(cells)
        v = rows[i][j].strip()
        rows[i][j] = {"d_unit": v + "ms", "d_tiny_negative": "-0.001",
                      "d_decimal_comma": v.replace(".", ",") if "." in v else v + ",5"}[op]
    elif op == "d_fraction":
        cells = _cells(rows, lambda h, v: bool(WHOLE_KEY.search(h)) and not DURATIONISH.search(h)
                       and re.fullmatch(r"\d+", v.strip()) is not None)
        if not cells:
            return None
        i, j = rng.choice(cells)
        rows[i][j] = rows[i][j].strip() + ".25"
    elif op == "d_header_upper":
        js = [j for j, h in enumerate(head) if h != h.upper()]
        if not js:
            return None
        j = rng.choice(js)
        rows[0][j] = head[j].upper()
    elif op == "d_dup_first_row":
        rows = rows[:2] + [list(rows[1])] + rows[2:]
    elif op == "d_second_header":
        if len(rows) < 3:
            return None
        k = 1 + len(rows[1:]) // 2
        rows = rows[:k] + [list(head)] + rows[k:]
    elif op == "d_comma_rows":
        rows = [head] + [[""] * len(head) for _ in range(3)]
    else:
        return None
    return _bytes(rows)


def mutate_db(path: Path, op: str, rng: random.Random) -> bool:
    """Damage one value (or table) of the SQLite file in place; False when nothing applies."""
    try:
        con = sqlite3.connect(path)
    except sqlite3.Error:
        return False
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                            "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        cand = []
        for t in tables:
            n = con.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0]
            if not n:
                continue
            if op == "q_empty_table":
                cand.append((t, None, n))
                continue
            cols = [r[1] for r in con.execute(f'PRAGMA table_info("{t}")')]
            for c in cols:
                row = con.execute(f'SELECT rowid, "{c}" FROM "{t}" WHERE typeof("{c}") IN (\'integer\', \'real\') '
                                  f'AND "{c}" > 0 LIMIT 1').fetchone()
                if row is not None:
                    cand.append((t, c, row[0]))
        if not cand:
            return False
        t, c, rowid = rng.choice(cand)
        if op == "q_empty_table":
            con.execute(f'DELETE FROM "{t}"')
        else:
            value = {"q_negative": None, "q_null": None, "q_text": "abc"}[op]
            if op == "q_negative":
                con.execute(f'UPDATE "{t}" SET "{c}" = -"{c}" WHERE rowid = ?', (rowid,))
            else:
                con.execute(f'UPDATE "{t}" SET "{c}" = ? WHERE rowid = ?', (value, rowid))
        con.commit()
        return True
    except sqlite3.Error:
        return False
    finally:
        con.close()


def mutate_bytes(data: bytes, name: str, op: str, rng: random.Random) -> Optional[bytes]:
    """A JSON / CSV operator on a file's bytes (inside gzip for `.gz`)."""
    if name.endswith(".gz"):
        try:
            inner = gzip.decompress(data)
        except (OSError, EOFError):
            return None
        new = mutate_bytes(inner, name[:-3], op, rng)
        return None if new is None else gzip.compress(new, mtime=0)
    if op.startswith("k_") and (name.endswith(".json") or re.match(rb"\s*[\[{]", data[:64])):
        return mutate_json(data, op, rng) if len(data) <= 64 * 1024 * 1024 else None
    if op.startswith("d_") and name.endswith(".csv"):
        return mutate_csv(data, op, rng)
    return None


def applies(p: Path, op: str, rel: str) -> bool:
    """Whether `op` changes the file at `p` (the plan keeps only cases that damage something)."""
    rng = random.Random(f"C:{SEED_C}:{rel}:{op}")
    if op.startswith("q_"):
        if not p.name.endswith(".db"):
            return False
        tmp = p.with_name(p.name + ".probe-c")
        shutil.copyfile(p, tmp)
        try:
            return mutate_db(tmp, op, rng)
        finally:
            tmp.unlink(missing_ok=True)
    try:
        data = p.read_bytes()
    except OSError:
        return False
    new = mutate_bytes(data, p.name, op, rng)
    return new is not None and new != data


def apply(p: Path, op: str, rel: str) -> None:
    rng = random.Random(f"C:{SEED_C}:{rel}:{op}")
    if op.startswith("q_"):
        assert mutate_db(p, op, rng)
        return
    new = mutate_bytes(p.read_bytes(), p.name, op, rng)
    assert new is not None
    p.write_bytes(new)
