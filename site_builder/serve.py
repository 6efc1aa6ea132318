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
import threading
import time
import urllib.parse
from pathlib import Path

from annotate.project import Project
from annotate.terminal import echo
from site_builder import names, render
from site_builder.site_pages import error_page
from site_builder.build import build_site, default_out_dir
from site_builder.output import prepare_out_dir

STAMP_PATH = "/__annotate__/stamp"
POLL_S = 0.4


def watched_stamp(config) -> tuple:
    """Stats of everything a save can change: annotation files, templates, assets, the message
    catalogue, and the harness specs and run records (a finished `annotate run` shows up on its
    runs page)."""
    from site_builder.i18n import CATALOGUE
    from site_builder.runs import stat_paths

    paths = [CATALOGUE]
    for d in (config.annotations_dir, render.TEMPLATES_DIR, render.ASSETS_SRC):
        if d.is_dir():
            paths += sorted(d.rglob("*"))
    return render.stats(paths + stat_paths(config))


class _State:
    def __init__(self) -> None:
        self.build_id = str(time.time_ns())
        self.lock = threading.Lock()
        self.sources = render.sources_stamp()  # the templates and messages the caches were drawn from


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

        def send_error(self, code, message=None, explain=None):
            if code != 404 or self.command != "GET":
                super().send_error(code, message, explain)
                return
            # the site's own page, in both languages, with links that lead back from this address
            rel = urllib.parse.urlsplit(self.path).path.lstrip("/")
            body = render.render_error(error_page(names.root_prefix(rel))).encode("utf-8")
            self.send_response(404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *args):  # quiet: the rebuild lines are what matter
            pass

    return functools.partial(Handler, directory=str(out_dir))


def serve(project: Project, out_dir: Path | None = None, port: int = 8000, jobs: int | None = None,
          ready: threading.Event | None = None, stop: threading.Event | None = None, force: bool = False) -> int:
    """Serve until Ctrl-C (or until `stop` is set). `ready` is set, with `.port`, once the
    first build is written and the server listens. The project's index is loaded once and kept;
    each rebuild reads the annotations again."""
    config = project.config
    out = prepare_out_dir(out_dir if out_dir is not None else default_out_dir(), force)
    project.index  # fetch and index before watching: the first build is the slow one
    seen = watched_stamp(config)  # before the first build: no save after it goes unseen
    rep = build_site(project, out, jobs=jobs, force=force)
    echo(f"built {rep.pages_rendered} pages in {rep.seconds:.2f} s")
    state = _State()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), make_handler(out, state))
    host, real_port = httpd.server_address[:2]
    echo(f"serving {out} at http://{host}:{real_port}/ (Ctrl-C to stop)")
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
            _rebuild(project.with_fresh_annotations(), out, jobs, state)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.shutdown()
        httpd.server_close()
    return 0


def _rebuild(project: Project, out: Path, jobs: int | None, state: _State) -> None:
    t = time.perf_counter()
    now = render.sources_stamp()
    if now != state.sources:  # templates or messages changed: drawn again (a note's save keeps them)
        render.clear_caches()
        state.sources = now
    try:
        rep = build_site(project, out, jobs=jobs, force=True)
    except Exception as exc:  # noqa: BLE001 - keep serving the last good site; say why
        echo(f"rebuild failed: {type(exc).__name__}: {exc}", err=True)
        return
    if rep.stats and (rep.stats.written or rep.stats.removed):
        state.build_id = str(time.time_ns())
    echo(f"rebuilt {rep.pages_rendered} page(s), {rep.stats.written if rep.stats else 0} file(s) "
         f"in {time.perf_counter() - t:.2f} s")
