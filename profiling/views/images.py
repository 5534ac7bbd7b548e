"""Static PNG/SVG images of plotly figures through kaleido 1.x driving the system (Debian) Chromium.

One `ImageSession` is one headless Chromium (kaleido.Kaleido) on a private event-loop thread, reused for
every figure rendered through it. Sizes are CSS pixels; a PNG at `scale` s is s x width by s x height
device pixels. No streamlit here; Chromium is never downloaded.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, as_completed
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

DEFAULT_WIDTH_PX = 1100  # figures.py sets heights only; the export renders them this wide
DEFAULT_HEIGHT_PX = 450
INSTALL_HINT = "install it with `apt-get install chromium` (Debian)"
CHROMIUM_NAMES = ("chromium", "chromium-browser")
SYSTEM_CHROMIUM = "/usr/bin/chromium"
OPEN_TIMEOUT_S = 60.0
RENDER_TIMEOUT_S = 90.0
RELOAD_EVERY = 25  # renders between page reloads of a tab (kaleido reloads after every render)


class ExportError(ValueError):
    """An export that cannot be done as asked; the message names the problem and the fix (one line)."""


class ChromiumMissing(ExportError):
    """PNG/SVG could not be rendered because no usable Chromium was found or it would not start.

    `written` lists the files that were still written (HTML report, CSV) before this was raised.
    """

    def __init__(self, message: str, written: list[Path] | None = None) -> None:
        super().__init__(message)
        self.written: list[Path] = list(written or [])


def _is_exe(path: str | os.PathLike) -> bool:
    return Path(path).is_file() and os.access(path, os.X_OK)


def find_chromium() -> str | None:
    """The Chromium executable kaleido should drive, or None.

    Honours BROWSER_PATH (kaleido/choreographer's own override; if set it must point at an executable),
    then `chromium` / `chromium-browser` on PATH, then /usr/bin/chromium. Never a downloaded browser.
    """
    override = os.environ.get("BROWSER_PATH")
    if override:
        return override if _is_exe(override) else None
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found and _is_exe(found):
            return found
    return SYSTEM_CHROMIUM if _is_exe(SYSTEM_CHROMIUM) else None


def chromium_problem() -> str | None:
    """Why PNG/SVG cannot be rendered here (one line), or None when a Chromium executable is there."""
    if find_chromium():
        return None
    override = os.environ.get("BROWSER_PATH")
    where = (
        f"BROWSER_PATH={override!r} is not an executable"
        if override
        else f"no `chromium` on PATH and no {SYSTEM_CHROMIUM}"
    )
    return f"no Chromium found ({where}); {INSTALL_HINT}"


def figure_size(fig: go.Figure) -> tuple[int, int]:
    """(width, height) in CSS pixels the figure is rendered at: its layout's, else the export defaults."""
    width = fig.layout.width or DEFAULT_WIDTH_PX
    height = fig.layout.height or DEFAULT_HEIGHT_PX
    return int(width), int(height)


def _kaleido_class() -> type:
    """kaleido.Kaleido, but reloading a tab's page only every RELOAD_EVERY renders instead of after each.

    Kaleido 1.5 reloads the page (re-parsing ~4.8 MB of plotly.js) after every figure, about 2/3 of the
    render time on 2 cores. Checked on the standard figures: PNGs are byte-identical either way and SVGs
    differ only in plotly's random element ids. Falls back to plain Kaleido if the hook is not there.
    """
    import kaleido

    base = kaleido.Kaleido
    if not hasattr(base, "_return_kaleido_tab"):
        return base

    class ReusingKaleido(base):
        _renders = 0

        async def _return_kaleido_tab(self, tab: Any) -> None:
            self._renders += 1
            if self._renders % RELOAD_EVERY == 0:
                await super()._return_kaleido_tab(tab)
            else:
                await self.tabs_ready.put(tab)

    return ReusingKaleido


class ImageSession:
    """One kaleido Chromium for many renders. Use as a context manager; `tabs` renders run in parallel.

    Entering (or `start()` then `wait_ready()`, to launch Chromium while other work runs) raises
    ChromiumMissing when there is no Chromium or it does not start.
    """

    def __init__(self, tabs: int = 1, browser: str | None = None, timeout_s: float = RENDER_TIMEOUT_S) -> None:
        self.tabs = tabs
        self.browser = browser
        self.timeout_s = timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._kaleido: Any = None
        self._opening: Future | None = None
        self._path: str | None = None

    def __enter__(self) -> ImageSession:
        self.start()
        try:
            return self.wait_ready()
        except BaseException:
            self.close()
            raise

    def start(self) -> ImageSession:
        """Launch Chromium in the background (returns at once); ChromiumMissing if there is none."""
        if self._loop is not None:
            return self
        self._path = self.browser or find_chromium()
        if self._path is None:
            raise ChromiumMissing(chromium_problem() or f"no Chromium found; {INSTALL_HINT}")
        kaleido_class = _kaleido_class()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kaleido-session", daemon=True)
        self._thread.start()

        async def open_browser() -> Any:
            # mathjax=False: no CDN fetch (the export works offline); plotly.js comes from the plotly package
            k = kaleido_class(path=self._path, n=self.tabs, mathjax=False, timeout=self.timeout_s)
            await k.open()
            return k

        self._opening = asyncio.run_coroutine_threadsafe(open_browser(), self._loop)
        return self

    def wait_ready(self) -> ImageSession:
        """Wait (at most OPEN_TIMEOUT_S) for the browser `start()` launched; ChromiumMissing if it failed."""
        if self._kaleido is not None:
            return self
        if self._opening is None:
            self.start()
        try:
            self._kaleido = self._opening.result(OPEN_TIMEOUT_S)
        except Exception as error:
            first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
            raise ChromiumMissing(
                f"Chromium at {self._path} did not start through kaleido ({first}); {INSTALL_HINT}"
            ) from None
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close Chromium and the loop thread (safe to call twice)."""
        if self._kaleido is None and self._opening is not None:
            try:  # still launching (an error elsewhere): let it finish so its Chromium is closed too
                self._kaleido = self._opening.result(OPEN_TIMEOUT_S)
            except Exception:  # it never started: nothing to close
                pass
        self._opening = None
        if self._kaleido is not None:
            try:
                self._call(self._kaleido.close(), 30)
            except Exception:  # closing a crashed browser: nothing left to do
                pass
            self._kaleido = None
        self._stop_loop()

    def _stop_loop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=10)
            self._loop.close()
        self._loop = self._thread = None

    def _call(self, coroutine: Any, timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def submit(self, fig: go.Figure | dict, fmt: str, scale: float = 1.0) -> Future:
        """Start rendering `fig` as 'png' or 'svg' at its figure_size x `scale`; a Future of the bytes."""
        if self._kaleido is None:
            raise RuntimeError("ImageSession is not open; use `with ImageSession() as session:`")
        if fmt not in ("png", "svg"):
            raise ExportError(f"unknown image format {fmt!r}; allowed: png, svg")
        width, height = (
            figure_size(fig)
            if isinstance(fig, go.Figure)
            else (
                int(fig.get("layout", {}).get("width") or DEFAULT_WIDTH_PX),
                int(fig.get("layout", {}).get("height") or DEFAULT_HEIGHT_PX),
            )
        )
        spec = fig.to_dict() if isinstance(fig, go.Figure) else fig
        opts = {"format": fmt, "width": width, "height": height, "scale": scale if fmt == "png" else 1}
        return asyncio.run_coroutine_threadsafe(self._kaleido.calc_fig(spec, opts=opts), self._loop)

    def render(self, fig: go.Figure | dict, fmt: str, scale: float = 1.0) -> bytes:
        """Render one figure and wait for its bytes."""
        return self.submit(fig, fmt, scale).result(self.timeout_s + 30)

    def render_many(self, jobs: Iterable[tuple[Any, go.Figure, str, float]]) -> Iterator[tuple[Any, bytes]]:
        """(key, fig, fmt, scale) jobs rendered in parallel over the tabs; yields (key, bytes) as each finishes."""
        futures = {self.submit(fig, fmt, scale): key for key, fig, fmt, scale in jobs}
        for future in as_completed(futures, timeout=None):
            yield futures[future], future.result(self.timeout_s + 30)


def _render_one(fig: go.Figure, fmt: str, scale: float, session: ImageSession | None) -> bytes:
    if session is not None:
        return session.render(fig, fmt, scale)
    with ImageSession() as own:
        return own.render(fig, fmt, scale)


def figure_to_png(fig: go.Figure, scale: float = 2, session: ImageSession | None = None) -> bytes:
    """PNG bytes of `fig` at figure_size x `scale` device pixels (2x by default).

    Uses `session` when given, else starts (and closes) a Chromium for this one figure. ChromiumMissing
    (an ExportError) when no Chromium is usable.
    """
    return _render_one(fig, "png", scale, session)


def figure_to_svg(fig: go.Figure, session: ImageSession | None = None) -> bytes:
    """SVG bytes (UTF-8) of `fig` at figure_size CSS pixels; see figure_to_png for `session` and errors."""
    return _render_one(fig, "svg", 1, session)
