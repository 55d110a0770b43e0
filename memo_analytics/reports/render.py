"""The Jinja2 environment and WeasyPrint rendering (STYLE §11).

Templates resolve through a ``ChoiceLoader``: a user's own template folder first (so a firm
can restyle its timesheet without forking), then ``report_templates/`` shipped in the wheel.
Undefined variables are errors (``StrictUndefined``); HTML is auto-escaped.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2

from ..domain.errors import InvalidFieldError, ReportError
from ..vault.io import atomic_write_bytes, output_target


def templates_dir() -> Path:
    """The folder of the templates shipped with the package."""
    return Path(str(files("memo_analytics.report_templates")))


def environment(user_templates: Path | None = None) -> jinja2.Environment:
    """A Jinja2 environment over the user's folder (first) and ours (second)."""
    loaders: list[jinja2.BaseLoader] = []
    if user_templates is not None:
        loaders.append(jinja2.FileSystemLoader(str(user_templates)))
    loaders.append(jinja2.FileSystemLoader(str(templates_dir())))
    return jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(["html", "html.j2", "xml"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_html(template: str, context: dict[str, Any], user_templates: Path | None = None) -> str:
    """Render ``template`` (e.g. ``timesheet.html.j2``) with ``context``.

    Raises
    ------
    ReportError
        The template is missing or refers to an undefined value.
    """
    if user_templates is not None and not Path(user_templates).is_dir():
        raise ReportError(f"Invalid templates: {user_templates} is not a folder")
    try:
        return environment(user_templates).get_template(template).render(**context)
    except jinja2.TemplateNotFound as exc:
        raise ReportError(f"Report template not found: {exc.name}") from None
    except jinja2.TemplateSyntaxError as exc:
        raise ReportError(f"Report template {exc.name or template} line {exc.lineno}: {exc.message}") from None
    except jinja2.TemplateError as exc:
        raise ReportError(f"Report template {template}: {exc.message}") from None
    except UnicodeDecodeError:
        raise ReportError(f"Report template {template} is not UTF-8") from None


def check_output_path(output: Path, forbidden: tuple[Path, ...] = ()) -> Path:
    """The real path a report will be written to.

    A symbolic link is followed (its target is replaced, the link kept). Refused: a path
    inside one of the ``forbidden`` folders (the vault: a report must never replace a
    record or the index), a missing folder, a parent that is not a folder, a symlink loop,
    and an existing target that is not a regular file (a folder, a device such as
    ``/dev/null``, a FIFO) — an atomic replace would destroy it.

    Raises
    ------
    ReportError
        ``Invalid output: ...``.
    """
    try:
        return output_target(output, forbidden)
    except InvalidFieldError as exc:
        raise ReportError(str(exc)) from None


def write_pdf(html: str, output: Path, base_dir: Path | None = None, forbidden: tuple[Path, ...] = ()) -> Path:
    """Render ``html`` to a PDF at ``output`` with WeasyPrint, written atomically.

    Raises
    ------
    ReportError
        The output folder does not exist or is not writable.
    """
    from weasyprint import HTML

    output = check_output_path(output, forbidden)
    pdf = HTML(string=html, base_url=str(base_dir or templates_dir())).write_pdf()
    try:
        atomic_write_bytes(output, pdf)
    except OSError as exc:
        raise ReportError(f"Invalid output: cannot write {output} ({exc.strerror})") from None
    return output
