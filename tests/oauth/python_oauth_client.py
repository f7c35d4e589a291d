"""The official MCP Python SDK's OAuth client against mcp-edge's authorization server.

    python python_oauth_client.py <mcp url> <username> <password> <seconds to wait>

`mcp.client.auth.OAuthClientProvider` discovers the authorization server, registers a client
(Dynamic Client Registration), and sends the user to `/authorize`. Its `redirect_handler` here
is the user: it completes mcp-edge's consent page with plain HTTP (GET the page with a cookie
jar, read the hidden `request` and `csrf` fields, POST username, password and decision=allow)
and reads the code from the `Location` of the redirect, which `callback_handler` returns. Then
the session lists the tools and calls echo, waits until the access token has expired, and calls
echo again, which the provider's refresh must make work.

Prints one JSON line with what happened.
"""
import asyncio
import json
import sys
from html.parser import HTMLParser
from urllib.parse import parse_qs, urljoin, urlparse

from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

try:  # 2.x: httpx2, streamable_http_client(url, http_client=...), AuthorizationCodeResult
    import httpx2 as httpx
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult
except ImportError:  # 1.x: httpx, streamablehttp_client(url, auth=...), (code, state)
    import httpx
    from mcp.client.streamable_http import streamablehttp_client as streamable_http_client_1x

    streamable_http_client = None
    AuthorizationCodeResult = None

REDIRECT_URI = "http://127.0.0.1:9/callback"  # never fetched: the redirect handler reads the Location


def field(obj, snake: str, camel: str):
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None
        self.history: list[OAuthToken] = []

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens
        self.history.append(tokens)

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


class ConsentForm(HTMLParser):
    """Reads the consent page: the form's action, its inputs and the ids the contract names."""

    def __init__(self) -> None:
        super().__init__()
        self.action = None
        self.inputs: dict[str, str] = {}
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "form" and a.get("id") == "consent":
            self.action = a.get("action")
        if tag == "input" and a.get("name"):
            self.inputs[a["name"]] = a.get("value") or ""


class Browser:
    """The user at the consent page, with plain HTTP and a cookie jar."""

    def __init__(self, username: str, password: str) -> None:
        self.username = username
        self.password = password
        self.result = None
        self.visits: list[dict] = []

    async def redirect_handler(self, authorization_url: str) -> None:
        async with httpx.AsyncClient(follow_redirects=False, timeout=30) as http:
            page = await http.get(authorization_url)
            form = ConsentForm()
            form.feed(page.text)
            visit = {
                "status": page.status_code,
                "contentType": page.headers.get("content-type", ""),
                "csrfCookie": "mcp_edge_csrf" in http.cookies,
                "frameOptions": page.headers.get("x-frame-options"),
                "csp": page.headers.get("content-security-policy", ""),
                "ids": sorted(form.ids & {"consent", "username", "password", "allow", "deny", "client-name", "redirect-host", "scopes", "resource"}),
                "hidden": sorted(k for k in ("request", "csrf") if k in form.inputs),
                "query": {k: v[0] for k, v in parse_qs(urlparse(authorization_url).query).items() if k != "code_challenge"},
            }
            self.visits.append(visit)
            if page.status_code != 200 or form.action is None:
                raise RuntimeError(f"no consent page at {authorization_url}: HTTP {page.status_code} {page.text[:500]}")
            answer = await http.post(
                urljoin(str(page.url), form.action),
                data={
                    "request": form.inputs.get("request", ""),
                    "csrf": form.inputs.get("csrf", ""),
                    "username": self.username,
                    "password": self.password,
                    "decision": "allow",
                },
            )
            visit["postStatus"] = answer.status_code
            visit["signinCookie"] = "mcp_edge_signin" in http.cookies
            location = answer.headers.get("location", "")
            visit["location"] = location.split("?")[0]
            if answer.status_code != 302 or not location.startswith(REDIRECT_URI):
                raise RuntimeError(f"the consent did not redirect to {REDIRECT_URI}: HTTP {answer.status_code} {location} {answer.text[:500]}")
            query = {k: v[0] for k, v in parse_qs(urlparse(location).query).items()}
            visit["redirectParams"] = sorted(query)
            visit["iss"] = query.get("iss")
            self.result = query

    async def callback_handler(self):
        q = self.result
        self.result = None
        if AuthorizationCodeResult is not None:
            return AuthorizationCodeResult(code=q["code"], state=q.get("state"), iss=q.get("iss"))
        return q["code"], q.get("state")


def text_of(result) -> str:
    return result.content[0].text if result.content else ""


async def run(url: str, username: str, password: str, wait: float) -> dict:
    storage = MemoryStorage()
    browser = Browser(username, password)
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="Python SDK OAuth test",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )
    out: dict = {}
    if streamable_http_client is not None:
        connect = streamable_http_client(url, http_client=httpx.AsyncClient(auth=provider, timeout=30))
    else:
        connect = streamable_http_client_1x(url, auth=provider)
    async with connect as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            init = await session.initialize()
            out["server"] = field(init, "server_info", "serverInfo").name
            out["tools"] = [t.name for t in (await session.list_tools()).tools]
            first = await session.call_tool("echo", {"message": "from python over oauth"})
            out["first"] = {"text": text_of(first), "isError": bool(field(first, "is_error", "isError")), "structured": field(first, "structured_content", "structuredContent")}
            tokens_before_wait = len(storage.history)
            await asyncio.sleep(wait)
            second = await session.call_tool("echo", {"message": "after the token expired"})
            out["second"] = {"text": text_of(second), "isError": bool(field(second, "is_error", "isError")), "structured": field(second, "structured_content", "structuredContent")}
            out["tokensBeforeWait"] = tokens_before_wait
    out["consentVisits"] = browser.visits
    out["clientId"] = storage.client.client_id if storage.client else None
    out["tokens"] = [
        {
            "access": t.access_token.split(".")[0] + ".",
            "refresh": (t.refresh_token or "").split(".")[0] + ".",
            "tokenType": t.token_type,
            "expiresIn": t.expires_in,
            "accessToken": t.access_token,
            "refreshToken": t.refresh_token,
        }
        for t in storage.history
    ]
    return out


if __name__ == "__main__":
    result = asyncio.run(run(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))
    print(json.dumps(result))
