"""`annotate serve`: the site on 127.0.0.1, rebuilt when an annotation, template or asset is
saved. The index is loaded once and kept, so a rebuild after editing a note costs only the
annotations, the affected page, the home page and the search index.

Pages reload themselves: site.js polls `/__annotate__/stamp` (answered here, not a file on
disk) once a second and reloads when the build id changes. A plain static server answers
404 there, and the script stops.
"""

from __future__ import annotations

import functools
import http.server
import sys
import threading
import time
from pathlib import Path

from site_builder import render
from site_builder.build import _ensure_fetched, _load_index, build_site, default_out_dir

STAMP_PATH = "/__annotate__/stamp"
POLL_S = 0.4


def watched_stamp(config) -> tuple:
    """Stats of everything a save can change: annotation files, templates, assets, and the
    harness specs and run records (a finished `annotate run` shows up on its runs page)."""
    from site_builder.runs import stat_paths

    paths = []
    for d in (config.annotations_dir, render.TEMPLATES_DIR, render.ASSETS_SRC):
        if d.is_dir():
            paths += sorted(d.rglob("*"))
    out = []
    for p in paths + stat_paths(config):
        try:
            st = p.stat()
            out.append((str(p), st.st_mtime_ns, st.st_size))
        except OSError:
            pass
    return tuple(out)


class _State:
    def __init__(self) -> None:
        self.build_id = str(time.time_ns())
        self.lock = threading.Lock()


def make_handler(out_dir: Path, state: _State):
    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's naming)
            if self.path.split("?", 1)[0].endswith(STAMP_PATH):
                body = state.build_id.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def end_headers(self):
            self.send_header("Cache-Control", "no-cache")
            super().end_headers()

        def log_message(self, fmt, *args):  # quiet: the rebuild lines are what matter
            pass

    return functools.partial(Handler, directory=str(out_dir))


def serve(config, out_dir: Path | None = None, port: int = 8000, jobs: int | None = None,
          ready: threading.Event | None = None, stop: threading.Event | None = None,
          index=None, pins: dict | None = None) -> int:
    """Serve until Ctrl-C (or until `stop` is set). `ready` is set, with `.port`, once the
    first build is written and the server listens; `index`/`pins` may be given (tests)."""
    from annotate.upstreams import load_upstreams

    out = Path(out_dir) if out_dir else default_out_dir()
    pins = pins if pins is not None else load_upstreams(config)
    if index is None:
        _ensure_fetched(config, list(pins), True)
        index = _load_index(config, list(pins), True)
    seen = watched_stamp(config)  # before the first build: no save after it goes unseen
    rep = build_site(config, out, jobs=jobs, index=index, pins=pins)
    print(f"built {rep.pages_rendered} pages in {rep.seconds:.2f} s", flush=True)
    state = _State()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), make_handler(out, state))
    host, real_port = httpd.server_address[:2]
    print(f"serving {out} at http://{host}:{real_port}/ (Ctrl-C to stop)", flush=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    if ready is not None:
        ready.port = real_port  # type: ignore[attr-defined]
        ready.set()
    try:
        while not (stop is not None and stop.is_set()):
            time.sleep(POLL_S)
            now = watched_stamp(config)
            if now == seen:
                continue
            seen = now
            render.environment.cache_clear()  # templates may have changed
            t = time.perf_counter()
            try:
                rep = build_site(config, out, jobs=jobs, index=index, pins=pins)
            except Exception as exc:  # keep serving the last good site; say why
                print(f"rebuild failed: {exc}", file=sys.stderr, flush=True)
                continue
            if rep.stats and (rep.stats.written or rep.stats.removed):
                state.build_id = str(time.time_ns())
            print(f"rebuilt {rep.pages_rendered} page(s), {rep.stats.written if rep.stats else 0} file(s) "
                  f"in {time.perf_counter() - t:.2f} s", flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.shutdown()
        httpd.server_close()
    return 0
