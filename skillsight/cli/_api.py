"""The commands' client of a running ``skillsight serve`` (``--api URL``, ``--key KEY``)."""

from __future__ import annotations

from typing import Any

from skillsight.errors import SkillsightError


class SourceError(SkillsightError):
    """The service could not be reached or refused the request."""


class NotFound(SkillsightError):
    """No such activation or trajectory in the project."""


class ServiceClient:
    """Calls of the REST API with the project key; failures become one clear error."""

    def __init__(self, api: str, key: str | None, *, timeout_s: float = 60.0) -> None:
        self.api = api.rstrip("/")
        self.headers = {"x-skillsight-key": key} if key else {}
        self.timeout_s = timeout_s

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        import httpx

        clean = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = httpx.get(
                self.api + path, params=clean, headers=self.headers, timeout=self.timeout_s
            )
        except httpx.HTTPError as exc:
            raise SourceError(f"cannot reach {self.api}: {exc}") from exc
        if response.status_code == 404:
            raise NotFound(response.json().get("detail", "not found"))
        if response.status_code != 200:
            raise SourceError(f"{self.api} answered {response.status_code}: {response.text[:300]}")
        return response.json()

    def post(
        self,
        path: str,
        content: bytes,
        content_type: str,
        params: dict[str, Any] | None = None,
        *,
        accept: frozenset[int] = frozenset({200}),
    ) -> Any:
        """POST ``content``; the JSON answer when its status is one of ``accept``."""
        import httpx

        clean = {k: v for k, v in (params or {}).items() if v is not None}
        headers = {**self.headers, "content-type": content_type}
        try:
            response = httpx.post(
                self.api + path,
                content=content,
                params=clean,
                headers=headers,
                timeout=self.timeout_s,
            )
        except httpx.HTTPError as exc:
            raise SourceError(f"cannot reach {self.api}: {exc}") from exc
        if response.status_code not in accept:
            try:
                detail = response.json().get("detail", response.text)
            except ValueError:
                detail = response.text
            raise SourceError(f"{self.api} answered {response.status_code}: {str(detail)[:300]}")
        return response.json()
