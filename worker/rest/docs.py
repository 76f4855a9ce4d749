"""``/docs`` (Swagger UI) and ``/redoc`` over ``/openapi.json``, working offline.

FastAPI's own pages load Swagger UI and ReDoc from a CDN, so on a worker without internet
access (most production networks) they are blank. These pages load the same scripts from
the assets the ``fastapi-offline`` distribution installs, served by the worker under
``/docs/assets/``. ``rest.docs.enabled=false`` leaves all of it out (404), for those who do
not want the pages served at all; ``/openapi.json`` stays.
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from starlette.responses import HTMLResponse

ASSETS_PATH = "/docs/assets"
ASSETS_DIR = Path(fastapi_offline.__file__).parent / "static"


def install_docs(app: FastAPI) -> None:
    """Serve ``/docs``, ``/redoc`` and their assets on ``app`` (outside the OpenAPI)."""
    app.mount(ASSETS_PATH, StaticFiles(directory=ASSETS_DIR), name="docs-assets")
    title = app.title
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url, title=f"{title} - Swagger UI",
            swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_PATH}/favicon.png",
            oauth2_redirect_url=None)

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi_url, title=f"{title} - ReDoc",
            redoc_js_url=f"{ASSETS_PATH}/redoc.standalone.js",
            redoc_favicon_url=f"{ASSETS_PATH}/favicon.png", with_google_fonts=False)
