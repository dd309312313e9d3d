"""``opsche image build``: the container image as an OCI layout (``make image``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from opsche_daemon.cli.errors import UserError

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add ``image`` to the top-level parser."""
    image = commands.add_parser("image", help="build opsche's container image (OCI layout)")
    actions = image.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build", help="Debian root filesystem (mmdebstrap) + opsche from PyPI, assembled by crane"
    )
    build.add_argument("--out", type=Path, required=True, help="OCI layout directory to write")
    build.add_argument(
        "--work",
        type=Path,
        default=None,
        help="working directory, kept so the next build reuses the root filesystem "
        "(default: $OPSCHE_CACHE_DIR/image)",
    )
    build.set_defaults(handler=_build)


def _build(args: argparse.Namespace) -> int:
    from opsche_daemon import __version__  # noqa: PLC0415
    from opsche_daemon.localcluster.tools import ToolBuilder, load_tool_versions  # noqa: PLC0415
    from opsche_daemon.localcluster.versions import cache_root  # noqa: PLC0415
    from opsche_daemon.shipping.image import ImageError, ImageSpec, build_image  # noqa: PLC0415

    tools = ToolBuilder(load_tool_versions(), cache_root())
    if "crane" in tools.missing():
        raise UserError(f"crane is not built in {tools.bin_dir}: run `make tools` first")
    source = Path(__file__).resolve().parents[3]
    if not (source / "pyproject.toml").is_file():
        raise UserError(f"{source} is not an opsche checkout (no pyproject.toml)")
    spec = ImageSpec(
        source=source,
        version=__version__,
        out=args.out,
        crane=tools.bin_dir / "crane",
        work=args.work or cache_root() / "image",
    )
    try:
        build_image(spec, out=lambda line: print(line, flush=True))
    except ImageError as exc:
        raise UserError(str(exc)) from None
    return 0
