"""Running the report's notebooks: a Jupyter kernel on this interpreter, papermill, results.

The notebooks in ``notebooks/`` are stored without outputs and take their settings from a
papermill ``parameters`` cell (``quick``, ``results_dir``, ...). ``execute`` runs one with
papermill; ``record`` is what each notebook's last cell calls to write its results as JSON.

Which Python runs a notebook: papermill starts the kernel a Jupyter *kernelspec* names, and
the usual ``python3`` spec found first on the Jupyter path may belong to another environment
(a user-wide spec under ``~/.local/share/jupyter`` comes before the venv's). So ``execute``
registers, once per process, a spec named ``KERNEL_NAME`` in a private temporary directory
put first on ``JUPYTER_PATH``, whose command is this interpreter (``sys.executable -m
ipykernel_launcher``) and whose ``PYTHONPATH`` starts with this checkout: the kernel imports
the same ``turbogelu`` as the caller, from a ``make test`` venv (editable install) or from a
plain ``PYTHONPATH=...`` run alike. Nothing is written outside that temporary directory.

The kernel's log stays quiet (``kernel_manager_class``): it talks to papermill over Unix
sockets in that directory (ZeroMQ's ipc transport) instead of TCP on localhost, so ipykernel
has no unencrypted TCP to warn about; and it is shut down without the SIGINT jupyter_client
sends first "in case it is busy" (it is idle: papermill has finished), which ipykernel would
log as the error "KeyboardInterrupt caught in kernel".
"""

from __future__ import annotations

import atexit
import datetime
import json
import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

# machine and write_json: the notebooks call them from here (notebooks.machine(), ...)
from .records import jsonable, machine, write_json

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = REPO / "notebooks"
RESULTS_DIR = REPO / "results"
KERNEL_NAME = "turbogelu-python"
PARAMETERS_TAG = "parameters"

_kernel_root: str | None = None
_manager_class = None
# A Unix socket path has at most 107 bytes on Linux (103 on macOS); the ipc transport adds
# "-<port>" to the base below.
_MAX_SOCKET_BASE = 90


def kernel_name() -> str:
    """Register the kernelspec described in the module docstring (once per process) and
    return its name."""
    global _kernel_root
    if _kernel_root is None or not Path(_kernel_root).is_dir():
        root = tempfile.mkdtemp(prefix="turbogelu-jupyter-")
        spec_dir = Path(root) / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        path = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        spec = {
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": f"Python ({sys.executable})",
            "language": "python",
            "env": {"PYTHONPATH": os.pathsep.join(dict.fromkeys(path))},
        }
        write_json(spec_dir / "kernel.json", spec)
        owner = os.getpid()
        # Forked workers inherit the directory and must not remove it when they exit.
        atexit.register(lambda: os.getpid() == owner and shutil.rmtree(root, ignore_errors=True))
        _kernel_root = root
    jp = os.environ.get("JUPYTER_PATH", "")
    if not jp.split(os.pathsep)[0] == _kernel_root:
        os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [_kernel_root, jp]))
    return KERNEL_NAME


def kernel_manager_class():
    """The jupyter_client kernel manager papermill runs the kernels with (module docstring):
    ipc transport with its sockets in the kernelspec's temporary directory where the platform
    has it (else TCP, as before), and no interrupt before the shutdown."""
    global _manager_class
    if _manager_class is None:
        import zmq
        from jupyter_client.manager import AsyncKernelManager
        from traitlets import CaselessStrEnum, default

        root = Path(_kernel_root or tempfile.gettempdir())
        ipc = zmq.has("ipc") and len(str(root)) + 18 <= _MAX_SOCKET_BASE

        class QuietKernelManager(AsyncKernelManager):
            transport = CaselessStrEnum(
                ["tcp", "ipc"], default_value="ipc" if ipc else "tcp", config=True
            )

            @default("ip")
            def _ip_for_transport(self) -> str:
                if self.transport == "ipc":  # an absolute, per-kernel base for the sockets
                    return str(Path(_kernel_root or root) / f"ipc-{uuid.uuid4().hex[:12]}")
                return super()._ip_default()

            async def _async_interrupt_kernel(self) -> None:
                if self.shutting_down:  # an idle kernel: the shutdown request suffices
                    return
                await super()._async_interrupt_kernel()

        _manager_class = QuietKernelManager
    return _manager_class


def notebook_path(name: str | Path) -> Path:
    """A notebook by path, or by stem in ``notebooks/`` ("01_tail_clamping")."""
    p = Path(name)
    if p.suffix == ".ipynb" and p.is_file():
        return p
    q = NOTEBOOK_DIR / (p.stem + ".ipynb")
    if not q.is_file():
        known = sorted(f.stem for f in NOTEBOOK_DIR.glob("*.ipynb"))
        raise FileNotFoundError(f"no notebook {name!r}; in {NOTEBOOK_DIR}: {known}")
    return q


def execute(
    notebook: str | Path,
    output: str | Path,
    parameters: dict | None = None,
    *,
    cwd: str | Path = REPO,
    timeout: float | None = None,
    log_output: bool = False,
    progress: bool = False,
):
    """Execute ``notebook`` with papermill into ``output`` (an .ipynb), with ``parameters``
    injected after its ``parameters`` cell; the kernel runs in ``cwd`` (the repository root
    by default, so relative paths in parameters mean the same as on the command line).
    ``progress``: papermill's bar of executed cells on stderr. Raises papermill's
    PapermillExecutionError if a cell fails. Returns the executed notebook (an nbformat
    NotebookNode)."""
    import papermill

    path = notebook_path(notebook)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    name = kernel_name()
    return papermill.execute_notebook(
        str(path),
        str(output),
        parameters=dict(parameters or {}),
        kernel_name=name,
        cwd=str(cwd),
        progress_bar={"desc": path.stem, "file": sys.stderr} if progress else False,
        log_output=log_output,
        execution_timeout=timeout,
        kernel_manager_class=kernel_manager_class(),
    )


QUICK_NOTE = (
    "**Quick-mode run** (`quick=True`): small inputs, few rounds and epochs, to check the "
    "pipeline; its numbers are not results (the full `make reproduce` makes those)."
)


def render_html(executed: str | Path) -> Path:
    """An executed notebook rendered to HTML beside it (same name, .html); returns the path.
    A quick run's page starts with ``QUICK_NOTE`` (its numbers check the pipeline only)."""
    import nbconvert
    import nbformat

    executed = Path(executed)
    node = nbformat.read(executed, as_version=4)
    if node.metadata.get("papermill", {}).get("parameters", {}).get("quick"):
        node.cells.insert(0, nbformat.v4.new_markdown_cell(QUICK_NOTE))
    body, _ = nbconvert.HTMLExporter().from_notebook_node(node)
    out = executed.with_suffix(".html")
    out.write_text(body)
    return out


def parameter_names(notebook: str | Path) -> list[str]:
    """The names the notebook's ``parameters`` cell assigns (papermill's inspection)."""
    return list(parameter_defaults(notebook))


def parameter_defaults(notebook: str | Path) -> dict[str, str]:
    """{name: the default's source text} of the notebook's ``parameters`` cell."""
    import papermill

    found = papermill.inspect_notebook(str(notebook_path(notebook)))
    return {name: p["default"] for name, p in found.items()}


def parse_value(key: str, text: str, default: str):
    """A -p value: JSON (numbers, true/false, null, lists, quoted strings). A bare word that
    is not JSON is taken as a string only where the parameter's default is a string literal
    (``-p target=gelu``); elsewhere it is an error, not a string the notebook would choke on."""
    try:
        return json.loads(text)
    except ValueError:
        if default.strip()[:1] in ("'", '"'):
            return text
        raise ValueError(
            f"-p {key}={text}: not a JSON value (the parameter's default is {default}); "
            f"give numbers, true/false/null, lists as JSON, strings as '\"text\"'"
        ) from None


def record(
    stem: str,
    results_dir: str | Path,
    figures: dict,
    parameters: dict,
    *,
    plots: list | None = None,
    path: str | Path | None = None,
    **details,
) -> Path:
    """Write a notebook's results to ``results_dir/<stem>.json`` (or ``path``): ``figures``,
    the headline numbers a report may quote (name -> number); ``parameters`` it ran with;
    ``plots`` (paths of the PNGs it wrote); ``details`` (tables, anything JSON-able); and the
    machine, the package version and the time. Returns the path."""
    from turbogelu import __version__

    figures = jsonable(figures)  # numpy numbers to Python; NaN and inf to None
    bad = [k for k, v in figures.items() if v is not None and not isinstance(v, int | float)]
    if bad or any(isinstance(v, bool) for v in figures.values()):
        raise TypeError(f"figures must be numbers (None where undefined); not: {bad}")
    payload = {
        "notebook": stem,
        "figures": figures,
        "parameters": parameters,
        "plots": [str(p) for p in plots or []],
        "machine": machine(),
        "turbogelu": __version__,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        **details,
    }
    out = Path(path) if path is not None else Path(results_dir) / f"{stem}.json"
    return write_json(out, payload)


def by_mode(value, quick: bool, full, quick_value):
    """A notebook parameter's value: ``value`` itself when one was given (not None: a value
    passed with papermill's -p wins over the mode), else the full or the quick mode's."""
    if value is not None:
        return value
    return quick_value if quick else full


def figure_dir(results_dir: str | Path, stem: str) -> Path:
    """Where a notebook saves its PNGs: ``results_dir/figures/<stem>/`` (created)."""
    d = Path(results_dir) / "figures" / stem
    d.mkdir(parents=True, exist_ok=True)
    return d


__all__ = [
    "KERNEL_NAME",
    "NOTEBOOK_DIR",
    "REPO",
    "RESULTS_DIR",
    "by_mode",
    "execute",
    "figure_dir",
    "kernel_name",
    "machine",
    "kernel_manager_class",
    "notebook_path",
    "parameter_names",
    "record",
    "render_html",
    "write_json",
]
