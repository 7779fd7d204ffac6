"""Robust readers shared by the loaders: every problem becomes a `DataIssue`, never an exception."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from reportgen.model import DataIssue

if TYPE_CHECKING:
    import pandas as pd

MAX_JSON_BYTES = 256 * 1024 * 1024  # whole-file JSON reads; bigger files must be streamed


class IssueLog:
    """Collects the data-quality issues of one loading job, with paths relative to the run root."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.issues: list[DataIssue] = []

    def rel(self, path: Path) -> str:
        try:
            return Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return Path(path).name

    def add(self, path: Path, problem: str, severity: str = "warning") -> None:
        self.issues.append(DataIssue(self.rel(path), problem, severity))


def clean_cell(value: str) -> str:
    """Strip the whitespace and the trailing tab torch_npu adds to timestamps."""
    return value.strip().strip("\t").strip()


def to_float(value: Any) -> float:
    """Parse a number; `N/A`, empty and garbage give NaN."""
    if value is None:
        return math.nan
    if isinstance(value, (int, float)):
        return float(value)
    s = clean_cell(str(value))
    if not s or s.upper() in ("N/A", "NA", "NAN", "NONE", "NULL", "-"):
        return math.nan
    try:
        return float(s)
    except ValueError:
        return math.nan


def read_csv_rows(path: Path, log: IssueLog) -> Optional[tuple[list[str], list[tuple[int, list[str]]]]]:
    """Read a CSV into (header, [(line_no, cells)]). Rows with the wrong width are reported and dropped.

    Returns None (with an issue logged) when the file cannot be read or has no header.
    """
    try:
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:
            reader = csv.reader(f)
            try:
                header = next(reader)
            except StopIteration:
                log.add(path, "file is empty", "error")
                return None
            except csv.Error as e:
                log.add(path, f"cannot parse the header: {e}", "error")
                return None
            header = [clean_cell(h) for h in header]
            while header and header[-1] == "":
                header.pop()
            if not header:
                log.add(path, "header line is empty", "error")
                return None
            rows: list[tuple[int, list[str]]] = []
            bad: list[int] = []
            line = 1
            while True:
                try:
                    cells = next(reader)
                except StopIteration:
                    break
                except csv.Error as e:
                    log.add(path, f"line {reader.line_num}: {e}; rest of the file skipped", "error")
                    break
                line += 1
                if not cells or all(not c.strip() for c in cells):
                    continue
                while len(cells) > len(header) and clean_cell(cells[-1]) == "":
                    cells = cells[:-1]
                if len(cells) != len(header):
                    bad.append(reader.line_num)
                    continue
                rows.append((reader.line_num, cells))
            if bad:
                where = ", ".join(str(n) for n in bad[:5]) + (" ..." if len(bad) > 5 else "")
                log.add(path, f"{len(bad)} row(s) with a wrong number of fields (line {where}); "
                        "those rows were skipped (file truncated or corrupt?)")
            return header, rows
    except OSError as e:
        log.add(path, f"cannot read the file: {e.strerror or e}", "error")
        return None


def read_json(path: Path, log: IssueLog) -> Any:
    """Read a whole JSON file; return None with an issue on any problem."""
    try:
        size = path.stat().st_size
    except OSError as e:
        log.add(path, f"cannot read the file: {e.strerror or e}", "error")
        return None
    if size == 0:
        log.add(path, "file is empty", "error")
        return None
    if size > MAX_JSON_BYTES:
        log.add(path, f"file is {size / 1e6:.0f} MB, too large to read whole; skipped", "warning")
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        log.add(path, f"not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})", "error")
    except OSError as e:
        log.add(path, f"cannot read the file: {e.strerror or e}", "error")
    return None


def read_frame(path: Path, log: IssueLog, columns: tuple[str, ...], optional: tuple[str, ...] = ()) -> Optional["pd.DataFrame"]:
    """Read the named columns of a (possibly large) CSV as strings with pandas' C parser.

    Header cells are stripped (torch_npu writes stray tabs). Rows with the wrong number of fields are skipped and
    counted in a data-quality entry. Returns None (with an issue) when the file or a required column is missing.
    """
    import pandas as pd

    try:
        with open(path, encoding="utf-8-sig", errors="replace") as f:
            header = next(csv.reader([f.readline()]), [])
            n_lines = sum(1 for line in f if line.strip())
    except OSError as e:
        log.add(path, f"cannot read the file: {e.strerror or e}", "error")
        return None
    names = [clean_cell(h) for h in header]
    if not any(names):
        log.add(path, "file is empty", "error")
        return None
    missing = [c for c in columns if c not in names and c not in optional]
    if missing:
        log.add(path, f"missing column(s) {', '.join(missing)}; not read", "error")
        return None
    want = [i for i, n in enumerate(names) if n in columns]
    try:
        df = pd.read_csv(path, encoding="utf-8-sig", encoding_errors="replace", header=0, names=names,
                         usecols=want, dtype=str, on_bad_lines="skip", skip_blank_lines=True,
                         keep_default_na=False)
    except (ValueError, pd.errors.ParserError, OSError) as e:
        log.add(path, f"cannot parse the file: {e}", "error")
        return None
    if len(df) < n_lines:
        log.add(path, f"{n_lines - len(df)} row(s) with a wrong number of fields were skipped "
                "(file truncated or corrupt?)")
    return df
