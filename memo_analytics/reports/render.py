"""The Jinja2 environment and WeasyPrint rendering (STYLE §11).

Templates resolve through a ``ChoiceLoader``: a user's own template folder first (so a firm
can restyle its timesheet without forking), then ``report_templates/`` shipped in the wheel.
The timesheet and invoice templates pull ``report.css`` in with ``{% include %}``, so the
stylesheet resolves the same way: a user's folder may override a template, the stylesheet,
or both. Undefined variables are errors (``StrictUndefined``); HTML is auto-escaped.

Any failure — a missing or broken template, an error raised while it renders, a resource it
names (image, stylesheet) that cannot be loaded — is one :class:`ReportError`, raised before
anything is written: the PDF is written atomically or not at all.
"""

from __future__ import annotations

import gc
import logging
import re
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from ..domain.errors import InvalidFieldError, ReportError
from ..domain.wire import printable_text
from ..vault.io import atomic_write_bytes, output_target


def templates_dir() -> Path:
    """The folder of the templates shipped with the package."""
    return Path(str(files("memo_analytics.report_templates")))


def _printed(value: Any) -> Any:
    """Every value a template prints as :func:`~memo_analytics.domain.wire.printable_text` has it:
    without direction controls (the letters stay, in their own order; a right-to-left script
    still reads right to left — a U+202E would print "Commerzbank" as "knabzremmoC" in the
    payment line) and without control characters other than tab and line breaks."""
    if isinstance(value, str):
        cleaned = printable_text(value)
        if cleaned is not value:
            return Markup(cleaned) if isinstance(value, Markup) else cleaned
    return value


def environment(user_templates: Path | None = None) -> jinja2.Environment:
    """A Jinja2 environment over the user's folder (first) and ours (second); every printed value
    passes :func:`_printed`."""
    loaders: list[jinja2.BaseLoader] = []
    if user_templates is not None:
        loaders.append(jinja2.FileSystemLoader(str(user_templates)))
    loaders.append(jinja2.FileSystemLoader(str(templates_dir())))
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(["html", "html.j2", "xml"]),
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_printed,
    )
    env.globals["stylesheet"] = lambda name="report.css": _stylesheet(env, name)
    env.filters["vat_id"] = printed_vat_id
    return env


def printed_vat_id(value: Any) -> Any:
    """A VAT id as a document prints it: a Swiss one in its official form (``CHE-116.281.710
    MWST``: the compact form kept for the e-invoice read as a typo to a client — found by a
    billing person), another as kept (EU ids are printed compact)."""
    text = str(value or "")
    if text.upper().startswith("CHE"):
        try:
            from stdnum.ch import vat

            return vat.format(text)
        except Exception:  # noqa: BLE001 - a form stdnum does not know: printed as kept
            return value
    return value


def _stylesheet(env: jinja2.Environment, name: str) -> Markup:
    """The text of the stylesheet ``name`` from the user's folder, else ours, for a
    ``<style>`` element: as written (no template syntax, no escaping)."""
    source, _, _ = env.loader.get_source(env, name)  # type: ignore[union-attr]
    return Markup(source.replace("</", "<\\/"))


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
    except RecursionError:
        raise ReportError(f"Report template {template}: recursion too deep") from None
    except Exception as exc:  # a user template's expression raised (1/0, a bad call ...)
        raise ReportError(f"Report template {template}: {type(exc).__name__}: {exc}") from None


def check_output_path(output: Path, forbidden: tuple[Path, ...] = (), suffixes: tuple[str, ...] = (".pdf",),
                      overwrite: bool = False, make_folders: bool = False) -> Path:
    """The path a report will be written to: :func:`~memo_analytics.vault.io.output_target`
    (outside the vault and every repository, one of the kind's ``suffixes``, never through
    a symbolic link, an existing file only with ``overwrite``); a missing folder may be made, as
    for stories (never inside the vault or a repository, never through a dangling link): with
    ``make_folders`` (just before the file is written) it is, else it is only checked (before the
    work, which may still fail: no empty folder is left then).

    Raises
    ------
    ReportError
        ``Invalid output: ...``.
    """
    try:
        return output_target(output, forbidden, suffixes, overwrite, make_folders=True, only_check=not make_folders)
    except InvalidFieldError as exc:
        raise ReportError(str(exc)) from None


#: Rules of WeasyPrint's user-agent stylesheet that apply a pseudo-element to *every*
#: element (footnote and note calls/markers, list markers): each costs a computed style per
#: element, about a fifth of the rendering time of a long timesheet. The lean sheet drops
#: the footnote/note rules (our templates use neither) and keeps list-marker styling for
#: list items only. A user template that uses CSS footnotes styles ``::footnote-call`` itself.
_UNIVERSAL_PSEUDO_RULE = re.compile(r"^::(footnote|note)-[a-z-]+\s*\{[^}]*\}\s*$", re.MULTILINE)


@lru_cache(maxsize=1)
def _lean_html_class() -> type:
    """``weasyprint.HTML`` with the lean user-agent stylesheet, or plain ``HTML`` when this
    WeasyPrint does not have the hook or the file (the output is the same, only slower)."""
    import weasyprint
    from weasyprint import CSS, HTML

    try:
        default = weasyprint.UA_STYLESHEET
        source = Path(weasyprint.__file__).parent / "css" / "html5_ua.css"
        text = source.read_text(encoding="utf-8")
        if not hasattr(HTML, "_ua_stylesheets"):
            return HTML
    except (AttributeError, OSError):  # pragma: no cover - another WeasyPrint layout
        return HTML
    text = _UNIVERSAL_PSEUDO_RULE.sub("", text)
    text = re.sub(r"^::marker(\s*\{)", r"li::marker\1", text, flags=re.MULTILINE)
    lean = CSS(string=text, base_url=source.as_uri())

    class LeanHTML(HTML):
        def _ua_stylesheets(self, *args: Any, **kwargs: Any) -> list:
            return [lean if sheet is default else sheet for sheet in super()._ua_stylesheets(*args, **kwargs)]

    return LeanHTML


class _ResourceErrors(logging.Handler):
    """Collects WeasyPrint's errors, which it logs for resources it cannot load or use
    (stylesheets, images) and then renders without."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def render_pdf_bytes(html: str, base_dir: Path | None = None, variant: str | None = None) -> bytes:
    """The PDF of ``html`` (relative URLs resolve against ``base_dir``, default ours);
    ``variant``: a WeasyPrint PDF variant (``pdf/a-3b`` for an e-invoice), else plain PDF.

    Raises
    ------
    ReportError
        A resource the HTML names could not be loaded (``Report resource: ...``).
    """
    errors = _ResourceErrors()
    logger = logging.getLogger("weasyprint")
    logger.addHandler(errors)
    # A long report builds hundreds of thousands of layout objects; the cyclic garbage
    # collector walking them again and again costs 10–20 % of the render. Reference counting
    # still frees as usual; cycles are collected once the PDF is made.
    collecting = gc.isenabled()
    gc.disable()
    try:
        pdf = _lean_html_class()(string=html, base_url=str(base_dir or templates_dir())).write_pdf(
            **({"pdf_variant": variant} if variant else {}))
    finally:
        if collecting:
            gc.enable()
        logger.removeHandler(errors)
    if errors.messages:
        raise ReportError(f"Report resource: {errors.messages[0].splitlines()[0]}")
    return pdf


def write_pdf(html: str, output: Path, base_dir: Path | None = None, forbidden: tuple[Path, ...] = (),
              overwrite: bool = False) -> Path:
    """Render ``html`` to a PDF at ``output`` with WeasyPrint, written atomically.

    Raises
    ------
    ReportError
        The output folder does not exist or is not writable; a resource the HTML names
        could not be loaded (nothing is written then).
    """
    check_output_path(output, forbidden, overwrite=overwrite)
    pdf = render_pdf_bytes(html, base_dir)
    output = check_output_path(output, forbidden, overwrite=overwrite, make_folders=True)  # again: rendering takes seconds
    try:
        atomic_write_bytes(output, pdf)
    except OSError as exc:
        raise ReportError(f"Invalid output: cannot write {output} ({exc.strerror or exc})") from None
    return output
