"""Drive `agent-controller mcp` with the official MCP Python client (tests/mcp.rs runs this).

argv: binary api_url files_dir. Prints one JSON object with what it saw; exits non-zero on
any failure.
"""
import asyncio
import json
import re
import sys

from mcp import ClientSession, StdioServerParameters, stdio_client


def attr(obj, *names):
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    return None


def text_of(res):
    return "\n".join(c.text for c in res.content if getattr(c, "type", "") == "text")


async def main():
    binary, api, files_dir = sys.argv[1:4]
    params = StdioServerParameters(command=binary, args=["mcp", "--api", api, "--files-dir", files_dir], env={})
    seen = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            init = await s.initialize()
            seen["version"] = attr(init, "protocol_version", "protocolVersion")
            seen["server"] = attr(attr(init, "server_info", "serverInfo"), "name")
            tools = (await s.list_tools()).tools
            seen["tools"] = sorted(t.name for t in tools)
            ann = {t.name: attr(t, "annotations") for t in tools}
            seen["read_only"] = sorted(n for n, a in ann.items() if a is not None and attr(a, "read_only_hint", "readOnlyHint"))
            res = await s.call_tool("create_session", arguments={"mode": "task", "target": "https://x.test/", "instruction": "get the report"})
            sid = re.search(r"sess_\d{8}_\d{6}(_\d+)?", text_of(res)).group(0)
            seen["session_id"] = sid
            waits = []
            for _ in range(20):
                res = await s.call_tool("wait_for_session", arguments={"session_id": sid, "timeout_s": 20})
                t = text_of(res)
                waits.append(t.splitlines()[0])
                if "confirmation pending" in t:
                    ok = await s.call_tool("respond_confirmation", arguments={"session_id": sid, "approved": True})
                    seen["respond"] = text_of(ok)
                if t.startswith("finished") or t.startswith("error") or t.startswith("stopped"):
                    break
            seen["waits"] = waits
            seen["report"] = text_of(await s.call_tool("get_report", arguments={"session_id": sid}))
            seen["files"] = json.loads(text_of(await s.call_tool("list_files", arguments={"session_id": sid})))
            seen["csv"] = text_of(await s.call_tool("get_file", arguments={"session_id": sid, "filename": "data.csv"}))
            seen["pdf"] = text_of(await s.call_tool("get_file", arguments={"session_id": sid, "filename": "report.pdf"}))
            bad = await s.call_tool("get_session", arguments={"session_id": "sess_nope"})
            seen["bad_is_error"] = attr(bad, "is_error", "isError")
            seen["bad_text"] = text_of(bad)
    print(json.dumps(seen))


asyncio.run(main())
