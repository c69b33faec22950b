"""Schema migrations driven through Alembic, and the startup check that the schema is at head.

This lives beside the revisions (not in `monitor.storage`) so that the dependency points one way:
`migrations` imports the ORM models, the models never import `migrations`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from monitor.errors import SchemaVersionError, StorageError
from monitor.storage import include_name


@dataclass(frozen=True)
class SchemaState:
    """Where a database stands relative to the code's migrations."""

    current: str | None
    head: str

    @property
    def at_head(self) -> bool:
        return self.current == self.head


# Tables, types and functions of a library's own schema (the work queue, migration 0031): applied
# by our migrations, but not modelled by our ORM.
FOREIGN_PREFIX = "procrastinate_"


def ours(name: str | None, _type: str, _parents: object) -> bool:
    """Whether a schema object is modelled by `monitor.storage` (Alembic's `include_name`): not
    a library's own (the work queue) nor a time partition of a large table (PostgreSQL)."""
    return not (name or "").startswith(FOREIGN_PREFIX) and include_name(name, _type, _parents)


def alembic_config(engine: Engine) -> AlembicConfig:
    """An Alembic config bound to an engine, with the packaged migrations."""
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(Path(__file__).parent))
    cfg.attributes["engine"] = engine
    return cfg


def head_revision(engine: Engine) -> str:
    """The newest revision the code knows."""
    head = ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
    assert head is not None, "migrations have no head"
    return head


def schema_state(engine: Engine) -> SchemaState:
    """Read the database's revision; StorageError if it is unreachable."""
    try:
        with engine.connect() as conn:
            current = MigrationContext.configure(conn).get_current_revision()
    except OperationalError as exc:
        raise _unreachable(engine, exc) from None
    return SchemaState(current=current, head=head_revision(engine))


def upgrade(engine: Engine, revision: str = "head") -> SchemaState:
    """Apply migrations up to `revision`."""
    _run(lambda cfg: command.upgrade(cfg, revision), engine)
    return schema_state(engine)


def downgrade(engine: Engine, revision: str = "base") -> SchemaState:
    """Revert migrations down to `revision`."""
    _run(lambda cfg: command.downgrade(cfg, revision), engine)
    return schema_state(engine)


def require_head(engine: Engine) -> None:
    """Refuse to run against a schema that is not at head (or a SQLite file that is missing)."""
    path = sqlite_file(engine)
    if path is not None and not path.exists():
        # Connecting would leave an empty database file behind for a read-only command.
        raise SchemaVersionError(
            f"no database at {path}: nothing was recorded there yet; run `modelwatch db upgrade` "
            "to create it (commands that write create it themselves)"
        )
    state = schema_state(engine)
    if not state.at_head:
        raise SchemaVersionError(
            f"database {_safe_url(engine)} is at revision {state.current or 'none (empty)'}, "
            f"not head {state.head}; run `modelwatch db upgrade`"
        )


def prepare_for_writes(engine: Engine) -> None:
    """Before a command writes: migrate an embedded SQLite database to head (creating it on
    first use); any other database must already be at head (`db upgrade` stays explicit)."""
    if sqlite_file(engine) is not None and not schema_state(engine).at_head:
        upgrade(engine)
    require_head(engine)


def sqlite_file(engine: Engine) -> Path | None:
    """The file of a file-backed SQLite database, else None."""
    if engine.url.get_backend_name() != "sqlite":
        return None
    database = engine.url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def _run(action: Callable[[AlembicConfig], None], engine: Engine) -> None:
    cfg = alembic_config(engine)
    try:
        action(cfg)
    except OperationalError as exc:
        raise _unreachable(engine, exc) from None
    except SQLAlchemyError as exc:
        raise StorageError(f"migration failed on {_safe_url(engine)}: {_first_line(exc)}") from None


def _unreachable(engine: Engine, exc: BaseException) -> StorageError:
    return StorageError(f"cannot reach database {_safe_url(engine)}: {_first_line(exc)}")


def _safe_url(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=True)


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__
