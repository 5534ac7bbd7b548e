"""Export for design reviews: every standard figure as PNG (2x) and SVG, its data as CSV, one HTML report.

`export_all` takes results tables or files (several are stacked with a `source` column), draws
`figures.standard_figures` once, renders all images through ONE kaleido Chromium session
(blockscope.profiling.views.images) and writes into `out_dir`:

  <name>.png   2x figure_size pixels      <name>.svg   figure_size CSS pixels
  <name>.csv   the FigureSpec's data       report.html  self-contained, interactive, offline

The files are written into a private folder beside `out_dir`, which then replaces `out_dir` whole (the old one is
renamed away, the new one in, the old deleted): a kill at any point leaves the previous report or the new one
whole, and the next export puts a report moved aside back. One export per folder at a time (an fcntl lock
`.<name>.export.lock` beside it); `out_dir` must be new, empty or an earlier export's folder.

Problems raise ExportError (a ValueError) with a one-line message. Without Chromium the HTML report and
CSVs are still written, then ChromiumMissing (an ExportError, `.written` = those files) says PNG/SVG were
skipped, why, and how to install Chromium. No streamlit here.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from blockscope import scratch
from blockscope.profiling.results import ResultsError, concat_results, load_results, softmax_rows
from blockscope.profiling.views.images import (
    ChromiumMissing,
    ExportError,
    ImageSession,
    chromium_problem,
    figure_size,
    figure_to_png,
    figure_to_svg,
)
from blockscope.profiling.views.provenance import footer

FORMATS: tuple[str, ...] = ("png", "svg", "html", "csv")
IMAGE_FORMATS = ("png", "svg")
PNG_SCALE = 2
IMAGE_TABS = 1  # kaleido tabs rendering in parallel (2 cores: one tab; see tools/bench_export.py)
REPORT_NAME = "report.html"
Progress = Callable[[int, int, str], None]
Source = pd.DataFrame | str | os.PathLike

__all__ = [
    "FORMATS",
    "ChromiumMissing",
    "ExportError",
    "ImageSession",
    "export_all",
    "figure_size",
    "output_path",
    "figure_to_png",
    "figure_to_svg",
    "load_inputs",
    "zip_files",
]


def load_inputs(
    frames_or_paths: Source | Sequence[Source] | Mapping[str, pd.DataFrame],
    op_rows: list[pd.DataFrame] | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """One table from a DataFrame, a results file, or several of either (stacked with a `source` column).

    Returns (table, source labels), plain softmax rows only (op 'softmax'); the fused ops' rows (`sweep --op`) are
    appended to `op_rows` when a list is given. ExportError names a missing or corrupt file (wrapping ResultsError).
    """
    if isinstance(frames_or_paths, Mapping):
        items = list(frames_or_paths.items())
    else:
        many = isinstance(frames_or_paths, Sequence) and not isinstance(frames_or_paths, str)
        inputs = list(frames_or_paths) if many else [frames_or_paths]
        items = [(_label(item, i, len(inputs)), item) for i, item in enumerate(inputs)]
    if not items:
        raise ExportError("nothing to export: no results given; expected a results .parquet/.csv or a DataFrame")
    loaded: dict[str, pd.DataFrame] = {}
    for label, item in items:
        table = item if isinstance(item, pd.DataFrame) else _load_file(Path(item))
        plain = softmax_rows(table)
        if op_rows is not None and len(plain) < len(table):
            op_rows.append(table.drop(index=plain.index))
        table = plain.reset_index(drop=True)  # the softmax pages' report: no sweep --op rows
        while label in loaded:
            label = f"{label}'"
        loaded[label] = table
    if len(loaded) == 1:
        ((label, table),) = loaded.items()
        return table, [label]
    try:
        return concat_results(loaded), list(loaded)
    except (ResultsError, ValueError) as error:
        raise ExportError(f"cannot stack the results tables: {error}") from None


def _label(item: Source, index: int, count: int) -> str:
    if isinstance(item, pd.DataFrame):
        return "results table" if count == 1 else f"results table {index + 1}"
    return Path(item).name


def _load_file(path: Path) -> pd.DataFrame:
    if path.is_dir():
        raise ExportError(
            f"results path {path} is a directory; expected a Blockscope results .parquet or .csv "
            "file (repeat --results FILE for several files)"
        )
    if not path.is_file():
        raise ExportError(f"results file {path} does not exist; expected a Blockscope results .parquet or .csv")
    try:
        return load_results(path)
    except ResultsError as error:
        message = str(error).removeprefix(f"{path.name}: ")
        raise ExportError(f"cannot export {path}: {message}") from None


def _check_formats(formats: Sequence[str]) -> tuple[str, ...]:
    formats = tuple(dict.fromkeys(f.strip().lower() for f in formats if f.strip()))
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ExportError(f"unknown export format(s) {', '.join(bad) or '(none given)'}; allowed: {', '.join(FORMATS)}")
    return formats


MARKER = ".blockscope-export"  # in every export folder: marks it as one the next export may replace
EXPORT_SUFFIXES = {".png", ".svg", ".csv", ".html"}


def _out_folder(out_dir: str | os.PathLike) -> Path:
    """`out_dir` as an absolute path whose parent exists and is writable: new, empty or an earlier export."""
    out = Path(os.path.abspath(out_dir))
    if out.is_symlink():
        out = out.resolve()
    if out.parent == out:
        raise ExportError(f"cannot export into {out}; choose a folder below it with --out")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.exists() and not out.is_dir():
            raise NotADirectoryError(20, "not a directory")
        if not os.access(out.parent, os.W_OK | os.X_OK):
            raise PermissionError(13, "its parent folder is not writable")
    except OSError as error:
        raise ExportError(
            f"cannot write to output directory {out} ({error.strerror or error}); "
            "choose a writable directory with --out"
        ) from None
    if out.is_dir():
        entries = list(out.iterdir())
        others = [
            p.name for p in entries if not (p.is_file() and not p.is_symlink() and p.suffix.lower() in EXPORT_SUFFIXES)
        ]
        if others and not (out / MARKER).is_file():
            raise ExportError(
                f"--out {out} holds files that are not an export ({', '.join(sorted(others)[:3])}); allowed: a new "
                "or empty folder, or an earlier export's (the export replaces that folder whole)"
            )
    return out


@contextlib.contextmanager
def _export_lock(out: Path):
    """Hold `.<name>.export.lock` beside `out` for the block; ExportError at once when another export holds it."""
    try:
        import fcntl
    except ImportError:  # no fcntl (Windows): exports are not serialized
        yield
        return
    lock = out.parent / f".{out.name}.export.lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as error:
        raise ExportError(f"cannot create the export lock {lock} ({error.strerror or error})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise ExportError(
                f"another export is writing {out} (lock {lock}); wait for it to finish or choose another --out"
            ) from None
        yield
    finally:
        os.close(fd)


def _recover(out: Path) -> None:
    """Under the lock: put back a report a killed export moved aside (when `out` is missing), then delete the
    staging and moved-aside folders of earlier exports (no other export runs now)."""
    aside = sorted(out.parent.glob(f".{out.name}.old-*"), key=lambda p: p.stat().st_mtime)
    if not out.exists() and aside:
        os.rename(aside.pop(), out)
    for stale in [*aside, *out.parent.glob(f".{out.name}.new-*")]:
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)


def _staging(out: Path) -> Path:
    """A private folder beside `out` for the new report (made readable as a normal folder when swapped in)."""
    try:
        stage = scratch.make_dir(out.parent, f".{out.name}.new-")
        umask = os.umask(0)
        os.umask(umask)
        stage.chmod(0o777 & ~umask)
        (stage / MARKER).write_text("Blockscope export: `blockscope export` replaces this folder whole\n")
    except OSError as error:
        raise ExportError(f"cannot write next to output directory {out} ({error.strerror or error})") from None
    return stage


def _swap_in(stage: Path, out: Path) -> None:
    """Replace `out` by `stage`: rename the old folder aside, rename the new one in, delete the old."""
    old = out.parent / f".{out.name}.old-{os.getpid()}-{os.urandom(4).hex()}"
    had_old = out.exists()
    if had_old:
        os.rename(out, old)
    os.rename(stage, out)
    with contextlib.suppress(OSError):
        fd = os.open(out.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    if had_old:
        shutil.rmtree(old, ignore_errors=True)


def output_path(out: Path, stem: str, suffix: str) -> Path:
    """`out`/<stem>.<suffix> with the stem reduced to [A-Za-z0-9._-] (figures.safe_name); ExportError if the
    result would still leave `out` (it cannot, but a file name made from data values is checked anyway)."""
    from blockscope.profiling.views.figures import safe_name

    path = out / f"{safe_name(stem)}.{safe_name(suffix)}"
    root = out.resolve()
    if path.resolve().parent != root:
        raise ExportError(f"refusing to write {path}: outside the output directory {out}")
    return path


def _write(path: Path, data: bytes | str) -> Path:
    try:
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    except OSError as error:
        raise ExportError(f"cannot write {path} ({error.strerror or error})") from None
    return path


def export_all(
    frames_or_paths: Source | Sequence[Source] | Mapping[str, pd.DataFrame],
    out_dir: str | os.PathLike,
    formats: Sequence[str] = FORMATS,
    method: str | None = None,
    progress: Progress | None = None,
    dtypes: list[str] | None = None,
    op_rows: pd.DataFrame | None = None,
) -> list[Path]:
    """Write every standard figure (PNG 2x, SVG), its data (CSV) and one HTML report into `out_dir`.

    The fused-op figures come from the inputs' `sweep --op` rows and `op_rows` (the dashboard's, kept apart from
    its softmax rows), else from the bundled fused-op benchmark.

    `method`: the timing method of the figures (default: the first the data has); `progress(done, total,
    name)` is called after each file. Returns the files written. Raises ExportError for bad input and
    ChromiumMissing (after writing HTML/CSV) when PNG/SVG were asked for but cannot be rendered.
    """
    from blockscope.profiling.views import dashboard_data as dd

    formats = _check_formats(formats)
    found: list[pd.DataFrame] = [op_rows] if op_rows is not None and len(op_rows) else []
    df, sources = load_inputs(frames_or_paths, found)
    final = _out_folder(out_dir)
    if dd.ran(df[df["method"] != "none"]).empty:
        raise ExportError("nothing to export: the results have no timed rows (all rows errored or compile-only)")
    methods = dd.options(df)["methods"]
    if method is not None and method not in methods:
        raise ExportError(f"timing method {method!r} is not in the results; allowed: {', '.join(methods)}")
    method = method or (dd.DEFAULT_METHOD if dd.DEFAULT_METHOD in methods else methods[0])
    with _export_lock(final):
        _recover(final)
        out = _staging(final)
        try:
            written, problem = _export_into(out, df, sources, formats, method, progress, dtypes, found)
            _swap_in(out, final)
        except BaseException:
            shutil.rmtree(out, ignore_errors=True)
            raise
    written = [final / path.name for path in written]
    if problem:
        kept = ", ".join(f for f in formats if f not in IMAGE_FORMATS) or "nothing else"
        raise ChromiumMissing(f"PNG/SVG skipped: {problem}; {kept} written to {final} ({len(written)} files)", written)
    return written


def _export_into(
    out: Path,
    df: pd.DataFrame,
    sources: list,
    formats: tuple[str, ...],
    method: str,
    progress: Progress | None,
    dtypes: list[str] | None,
    op_rows: list[pd.DataFrame] | None = None,
) -> tuple[list[Path], str | None]:
    """Write the export's files into the folder `out`; (files written, why PNG/SVG were skipped or None)."""
    from blockscope.profiling.views.figures import standard_figures

    images = [f for f in IMAGE_FORMATS if f in formats]
    problem = chromium_problem() if images else None
    session_or_none = ImageSession(tabs=IMAGE_TABS) if images and not problem else None
    with contextlib.closing(session_or_none) if session_or_none else contextlib.nullcontext() as session:
        if session is not None:
            session.start()  # Chromium launches while the figures are drawn
        backends, numerics, warps_grid = bundled_companions(df)
        specs = standard_figures(
            df,
            method=method,
            dtypes=dtypes,
            backends=backends,
            numerics=numerics,
            warps_grid=warps_grid,
            fused=fused_companion(op_rows or []),
        )
        evidence = pd.concat([df, *op_rows], ignore_index=True) if op_rows else df  # whose runs the footer names
        total = len(specs) * (("csv" in formats) + (0 if problem else len(images))) + ("html" in formats)
        written: list[Path] = []

        def done(path: Path) -> None:
            written.append(path)
            if progress:
                progress(len(written), total, path.name)

        if "csv" in formats:
            for spec in specs:
                done(_write(output_path(out, spec.name, "csv"), safe_csv(spec.data)))
        if "html" in formats:
            from blockscope.profiling.views.report import report_html

            done(
                _write(
                    output_path(out, Path(REPORT_NAME).stem, "html"),
                    report_html(df, specs, method, sources=sources, provenance_rows=evidence),
                )
            )
        if session is not None:
            problem = _render_images(session, specs, images, out, done, footer(evidence))
    return written, problem


def _render_images(
    session: ImageSession, specs: list, images: list[str], out: Path, done: Callable[[Path], None], footer: str = ""
) -> str | None:
    """Render every spec in `images` formats through `session`, each laid out for a static image with the
    provenance `footer` (figures.for_export); the reason when Chromium is unusable."""
    from blockscope.profiling.views.figures import for_export

    try:
        session.wait_ready()
        ready = {spec.name: for_export(spec.figure, footer) for spec in specs}
        jobs = [
            ((spec.name, fmt), ready[spec.name], fmt, PNG_SCALE if fmt == "png" else 1)
            for spec in specs
            for fmt in images
        ]
        for (name, fmt), data in session.render_many(jobs):
            done(_write(output_path(out, name, fmt), data))
    except ChromiumMissing as error:
        return str(error)
    except ExportError:
        raise
    except (OSError, RuntimeError, TimeoutError, ValueError) as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        raise ExportError(f"rendering PNG/SVG through kaleido failed ({type(error).__name__}: {first})") from None
    return None


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet runs a cell that starts so


def safe_csv(data: pd.DataFrame) -> str:
    """`data` as CSV with every text cell that a spreadsheet would run as a formula (it starts with = + - @, a tab
    or a carriage return) prefixed with an apostrophe; numbers are left as they are."""
    out = data.copy()
    for column in out.columns:
        if pd.api.types.is_numeric_dtype(out[column]) or pd.api.types.is_bool_dtype(out[column]):
            continue
        out[column] = out[column].map(
            lambda v: f"'{v}" if isinstance(v, str) and v.startswith(FORMULA_STARTS) else v, na_action="ignore"
        )
    return out.to_csv(index=False)


def bundled_companions(df: pd.DataFrame) -> tuple[pd.DataFrame | None, pd.DataFrame | None, pd.DataFrame | None]:
    """(backends, numerics, warps grid) tables to draw where `df` lacks them, as the pages do: the bundled backends
    capture when `df` has no peer backend, the bundled numerics when it has no numerics rows, the bundled num_warps
    grid (tradeoffs) when it times each variant at one num_warps; None where `df` has its own or nothing is bundled."""
    from blockscope import paths
    from blockscope.profiling.views import backends as views
    from blockscope.profiling.views import tradeoffs
    from blockscope.profiling.views.figures import numerics as fn

    def bundled(path: Path) -> pd.DataFrame | None:
        try:
            return load_results(path) if path.is_file() else None
        except ResultsError:
            return None

    backends = None if views.has_peers(df) else bundled(paths.BUNDLED_BACKENDS)
    numerics = None if len(fn.numerics_rows(df)) else bundled(paths.BUNDLED_NUMERICS)
    warps_grid = None if tradeoffs.warps_axis_variants(df) else bundled(paths.BUNDLED_WARPS_GRID)
    return backends, numerics, warps_grid


def fused_companion(op_rows: Sequence[pd.DataFrame]) -> pd.DataFrame | None:
    """The fused-op table the export draws, as the Backends page picks it: the inputs' own `sweep --op` rows when
    there are some, else the bundled fused-op benchmark (data/h200_fused.csv); None when neither is there."""
    from blockscope.profiling.views import fused

    rows = [part for part in op_rows if len(part)]
    try:
        if rows:
            return fused.from_op_rows(pd.concat(rows, ignore_index=True))
        return fused.load_bundled_fused()
    except (ResultsError, OSError, ValueError):
        return None


def zip_files(paths: Sequence[Path], root: Path | None = None) -> bytes:
    """A zip (deflated) of `paths`, named relative to `root` (default: their own names)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path in paths:
            archive.write(path, str(path.relative_to(root)) if root else path.name)
    return buffer.getvalue()
