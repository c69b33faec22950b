"""`/v1/models`: the registry as the API shows it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import selectinload

from monitor.daemon.auth import requires
from monitor.daemon.common import errors
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


@router.get(
    "/models", dependencies=[Depends(requires("read"))], response_model=ModelList,
    responses=errors(),
)  # fmt: skip
def list_models(request: Request) -> ModelList:
    """Models, their versions and aliases (active, last_known_good)."""
    engine = request.app.state.daemon.engine
    with session_factory(engine)() as s:
        models = s.scalars(
            select(Model).options(selectinload(Model.versions)).order_by(Model.name)
        ).all()
        aliases = s.execute(select(ModelAlias.model_id, ModelAlias.alias, ModelAlias.version_id))
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
    return ModelList(models=out)
