"""`/v1/models`: the registry as the API shows it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.orm import selectinload

from monitor.app.daemon._auth import requires
from monitor.app.daemon._common import errors
from monitor.app.daemon._paging import Cursor, Limit, decode_cursor, page_of
from monitor.storage import Model, ModelAlias, session_factory

router = APIRouter(tags=["models"])


class ModelOut(BaseModel):
    """A registered model: its versions and where its aliases point."""

    name: str
    versions: list[str]
    active: str | None
    last_known_good: str | None
    # Optimization settings per version (precision, quantization, batching, runtime, meta).
    settings: dict[str, dict[str, Any]] = {}


class ModelList(BaseModel):
    models: list[ModelOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null: last.")


@router.get(
    "/models", dependencies=[Depends(requires("read"))], response_model=ModelList,
    responses=errors(422),
)  # fmt: skip
def list_models(request: Request, cursor: Cursor = None, limit: Limit = 500) -> ModelList:
    """Models by name, their versions and aliases (active, last_known_good)."""
    engine = request.app.state.daemon.engine
    after = decode_cursor("models", cursor, (str,))
    query = select(Model).options(selectinload(Model.versions)).order_by(Model.name)
    if after is not None:
        query = query.where(Model.name > after[0])
    with session_factory(engine)() as s:
        page = page_of("models", s.scalars(query.limit(limit + 1)).all(), limit, _key)
        models = page.items
        # The page's aliases only: a page costs what it shows, not the whole registry.
        aliases = s.execute(
            select(ModelAlias.model_id, ModelAlias.alias, ModelAlias.version_id).where(
                ModelAlias.model_id.in_([m.id for m in models])
            )
        )
        by_model: dict[int, dict[str, int]] = {}
        for model_id, alias, version_id in aliases:
            by_model.setdefault(model_id, {})[alias] = version_id
        out = []
        for m in models:
            names = {v.id: v.version for v in m.versions}
            al = {a: names.get(vid) for a, vid in by_model.get(m.id, {}).items()}
            out.append(
                ModelOut(
                    name=m.name,
                    versions=[v.version for v in m.versions],
                    active=al.get("active"),
                    last_known_good=al.get("last_known_good"),
                    settings={v.version: dict(v.settings or {}) for v in m.versions},
                )
            )
    return ModelList(models=out, next_cursor=page.next_cursor)


def _key(model: Model) -> tuple[str]:
    return (model.name,)
