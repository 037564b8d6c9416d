"""``POST /api/v1/skills``: a skills repository's CI pushes the SKILL.md folders it merges.

Claude Code's telemetry names a skill but not its contract, so a service running apart from
the agents learns its catalogue here: an archive of one or more skill folders (gzipped tar, as
``skillsight skills scan DIR --api URL`` sends it, or zip). The folders are unpacked into a fresh
directory and checked with the rules of ``skillsight skills scan``; every skill without a
violation is recorded by name and content version (the SHA-256 of the folder, the same as a
local scan computes), so posting the same folder again changes nothing. A skill with a
violation is not recorded: the answer is 422 with each violation, the valid ones recorded.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from skillsight.api._deps import StoreDep, services_of
from skillsight.errors import SkillsightError
from skillsight.skills import MAX_ARCHIVE_BYTES, ScanReport, scan, unpack_skills
from skillsight.store import Store
from skillsight.tenancy import ADMIN, Forbidden, Unauthenticated, project_for

router = APIRouter()

ARCHIVE_TYPES = frozenset(
    {
        "application/gzip",
        "application/x-gzip",
        "application/x-tar",
        "application/x-gtar",
        "application/zip",
        "application/octet-stream",
    }
)


class RecordedSkillOut(BaseModel):
    name: str
    version: str = Field(description="SHA-256 of the skill folder's content")
    path: str = Field(description="the folder inside the archive")
    allowed_tools: list[str] | None = Field(description="declared patterns; null = undeclared")
    known: bool = Field(description="this version was already in the catalogue (idempotent)")


class ViolationOut(BaseModel):
    file: str = Field(description="SKILL.md inside the archive")
    line: int | None
    rule: str
    message: str


class CatalogueUpdateOut(BaseModel):
    project: str
    recorded: list[RecordedSkillOut]
    violations: list[ViolationOut]


def _project(request: Request) -> str:
    """The caller's project, from a key with the ``admin`` scope: the catalogue decides what
    every verdict holds a skill to, so an agent's ingest key must not rewrite it."""
    try:
        return project_for(services_of(request).settings.api_keys, request.headers, ADMIN)
    except Unauthenticated as exc:
        raise HTTPException(401, str(exc)) from exc
    except Forbidden as exc:
        raise HTTPException(403, str(exc)) from exc


def _record(
    store: Store, project: str, data: bytes, source: str
) -> tuple[list[RecordedSkillOut], list[ViolationOut]]:
    with tempfile.TemporaryDirectory(prefix="skillsight-upload-") as tmp:
        root = Path(tmp)
        unpack_skills(data, root)
        report: ScanReport = scan([root])
        if not report.files:
            raise SkillsightError("the archive holds no SKILL.md")
        valid = report.valid_skills
        known = {(e["name"], e["version"]) for e in store.skills.find(project, limit=100_000)}
        relative = {m.path: m.path.relative_to(root).as_posix() for m in report.skills}
        base = source.rstrip("/")
        uris = {m.path: f"{base}/{relative[m.path]}" if base else "" for m in valid}
        store.skills.insert(project, valid, source_uris=uris)
        recorded = [
            RecordedSkillOut(
                name=m.name,
                version=m.version,
                path=relative[m.path],
                allowed_tools=m.allowed_tools,
                known=(m.name, m.version) in known,
            )
            for m in valid
        ]
        violations = [
            ViolationOut(
                file=Path(v.file).relative_to(root).as_posix()
                if Path(v.file).is_relative_to(root)
                else v.file,
                line=v.line,
                rule=v.rule,
                message=v.message,
            )
            for v in report.violations
        ]
    return recorded, violations


@router.post(
    "/api/v1/skills",
    response_model=CatalogueUpdateOut,
    tags=["skills"],
    responses={
        400: {"description": "not a readable archive of skill folders"},
        413: {"description": "the archive is too large"},
        415: {"description": "not an archive"},
        422: {"description": "some skills break the rules; the valid ones were recorded"},
    },
)
async def record_skills(
    request: Request,
    store: StoreDep,
    source: Annotated[
        str,
        Query(
            max_length=2048,
            description="where the folders come from (a repository URL or path); each skill's "
            "source_uri is this joined with its folder inside the archive",
        ),
    ] = "",
) -> JSONResponse:
    """Record the skill folders of an archive in the project's catalogue (idempotent).

    Example: `skillsight skills scan .claude/skills --api http://skillsight:8000 --key $KEY`
    """
    project = _project(request)
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in ARCHIVE_TYPES:
        raise HTTPException(
            415, f"send a gzipped tar or a zip of skill folders, not {kind or 'no content type'}"
        )
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_ARCHIVE_BYTES:
        raise HTTPException(413, f"the archive is larger than {MAX_ARCHIVE_BYTES} bytes")
    data = await request.body()
    if len(data) > MAX_ARCHIVE_BYTES:
        raise HTTPException(413, f"the archive is larger than {MAX_ARCHIVE_BYTES} bytes")
    try:
        recorded, violations = await asyncio.to_thread(_record, store, project, data, source)
    except SkillsightError as exc:
        raise HTTPException(400, str(exc)) from exc
    body = CatalogueUpdateOut(project=project, recorded=recorded, violations=violations)
    return JSONResponse(body.model_dump(), status_code=422 if violations else 200)
