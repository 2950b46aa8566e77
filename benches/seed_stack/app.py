"""The seed's stack, rebuilt small for `make bench` to measure against (it is not shipped).

What /work/shared/seeds/000_*.txt and 001_*.txt describe, for the endpoints the benchmarks use:
Flask served by waitress (its default 4 threads) on two ports; on the worker port /register,
a long-polling GET /command fed by a Queue(maxsize=1), POST /result releasing the waiting agent
through an Event, multipart POST /upload saved under the session's files/; on the API port
POST /sessions starting one agent thread per session, GET /sessions/<id>, the file list, a file,
and the zip of all files. The agent does what the seed's agent does per turn: one Anthropic
Messages call over HTTP, each tool_use handed to the worker and waited for, the tool results
sent back, and conversation_log.json rewritten after the turn.

    python app.py --api-port 5900 --worker-port 5901 --output ./output --model-url http://127.0.0.1:PORT
    python app.py ... --dispatch-bench 5000   # time put_command → worker → result, print one JSON line
"""

import argparse
import itertools
import json
import os
import queue
import re
import sys
import tempfile
import threading
import time
import zipfile

import requests
from flask import Flask, abort, jsonify, request, send_file, send_from_directory
from waitress import serve

LONG_POLL_S = 20
COMMAND_TIMEOUT_S = 120
LOCAL_TOOLS = {"save_note", "finish_task", "finish_exploration"}


def tool(_name, _text, **props):
    return {"name": _name, "description": _text,
            "input_schema": {"type": "object", "properties": {k: {"type": v} for k, v in props.items()}}}


# The seed's task·app set (16 tools) plus the shell tools the benchmark's model calls.
TOOLS = [
    tool("screenshot", "Capture the screen."), tool("get_ui_tree", "Read the UI tree."),
    tool("list_elements", "List interactive elements."), tool("click", "Click.", x="integer", y="integer"),
    tool("right_click", "Right click.", x="integer", y="integer"),
    tool("double_click", "Double click.", x="integer", y="integer"), tool("type_text", "Type.", text="string"),
    tool("press_key", "Press a key.", key="string"), tool("scroll", "Scroll.", amount="integer"),
    tool("switch_window", "Switch window.", title="string"), tool("get_window_info", "Window info."),
    tool("save_note", "Save a note.", note="string"),
    tool("request_confirmation", "Ask the user.", action="string", description="string"),
    tool("save_file", "Save a file.", filename="string", content="string"),
    tool("send_notification", "Notify.", message="string"), tool("finish_task", "Finish.", summary="string"),
    tool("run_command", "Run a shell command.", command="string"),
    tool("read_file", "Read a file.", path="string"), tool("list_dir", "List a directory.", path="string"),
]
SYSTEM = ("You are an automation agent controlling a Windows PC application.\n"
          "Execute the user's task through the available tools.\n\n## Principles\n"
          "1. Understand first — screenshot and read UI before acting\n2. For risky actions: call "
          "request_confirmation\n3. Report progress via save_note\n4. Use save_file for output files "
          "(CSV, text)\n5. Call finish_task when done\n6. If error, stop and report")


class CommandQueue:
    """One command at a time between an agent and the worker: Queue(maxsize=1) + Event."""

    def __init__(self):
        self.commands = queue.Queue(maxsize=1)
        self.result_event = threading.Event()
        self.result = None
        self.counter = itertools.count(1)
        self.lock = threading.Lock()

    def put_command(self, action, params, timeout=COMMAND_TIMEOUT_S):
        with self.lock:
            cmd = {"id": f"cmd_{next(self.counter):04d}", "action": action, "params": params}
            self.result_event.clear()
            self.result = None
            self.commands.put(cmd)
            if not self.result_event.wait(timeout):
                return {"success": False, "error": "timeout"}
            return self.result

    def get_command(self, timeout):
        try:
            return self.commands.get(timeout=timeout)
        except queue.Empty:
            return {"action": "wait"}

    def put_result(self, result):
        self.result = result
        self.result_event.set()


class SessionManager:
    def __init__(self, output_dir, model_url, commands):
        self.output_dir = output_dir
        self.model_url = model_url
        self.commands = commands
        self.sessions = {}
        self.counter = itertools.count(1)

    def create_session(self, params):
        # The seed's sess_YYYYMMDD_HHMMSS, with a counter so two in one second do not collide.
        sid = time.strftime("sess_%Y%m%d_%H%M%S") + f"_{next(self.counter)}"
        out = os.path.join(self.output_dir, sid)
        os.makedirs(os.path.join(out, "files"), exist_ok=True)
        os.makedirs(os.path.join(out, "screenshots"), exist_ok=True)
        session = {"session_id": sid, "status": "running", "mode": params.get("mode", "task"),
                   "target": params.get("target", ""), "instruction": params.get("instruction"),
                   "goal": params.get("goal"), "options": params.get("options") or {}, "output_dir": out,
                   "log_buffer": [], "turn": 0, "files": []}
        self.sessions[sid] = session
        agent = Agent(self, session)
        session["agent_thread"] = threading.Thread(target=agent.run_loop, daemon=True)
        session["agent_thread"].start()
        return sid

    def public(self, sid):
        s = self.sessions[sid]
        return {k: v for k, v in s.items() if k not in ("agent_thread", "log_buffer")}

    def files_dir(self, sid):
        return os.path.join(self.sessions[sid]["output_dir"], "files")

    def store_file(self, sid, filename, stream):
        name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(filename)) or "file"
        path = os.path.join(self.files_dir(sid), name)
        stream.save(path)
        size = os.path.getsize(path)
        self.sessions[sid]["files"].append({"filename": name, "size_kb": size // 1024, "type": "download"})
        return name, size


class Agent:
    def __init__(self, manager, session):
        self.manager = manager
        self.session = session
        self.http = requests.Session()
        self.messages = []

    def log(self, kind, text):
        self.session["log_buffer"].append({"time": time.time(), "type": kind, "text": text})

    def run_loop(self):
        s = self.session
        first = f"Task: {s['instruction']}\nTarget: {s['target']}"
        self.messages.append({"role": "user", "content": first})
        max_turns = s["options"].get("max_turns", 200)
        try:
            for turn in range(1, max_turns + 1):
                s["turn"] = turn
                if self.turn():
                    s["status"] = "finished"
                    return
            s["status"] = "finished"
        except Exception as e:  # the seed ends the session with the error
            s["status"] = "error"
            self.log("error", str(e))

    def turn(self):
        body = {"model": "claude-sonnet-4-20250514", "max_tokens": 4096, "system": SYSTEM, "tools": TOOLS,
                "messages": self.messages}
        headers = {"x-api-key": "bench", "anthropic-version": "2023-06-01"}
        reply = self.http.post(self.manager.model_url + "/v1/messages", json=body, headers=headers, timeout=120)
        reply.raise_for_status()
        content = reply.json()["content"]
        self.messages.append({"role": "assistant", "content": content})
        results, done = [], False
        for block in content:
            if block["type"] == "text":
                self.log("assistant", block["text"])
            elif block["type"] == "tool_use":
                self.log("tool_call", f"{block['name']} {json.dumps(block['input'])}")
                if block["name"] in LOCAL_TOOLS:
                    done = done or block["name"].startswith("finish")
                    out = {"success": True}
                else:
                    out = self.manager.commands.put_command(block["name"], block["input"])
                results.append({"type": "tool_result", "tool_use_id": block["id"], "content": json.dumps(out)})
        if results:
            self.messages.append({"role": "user", "content": results})
        self.save_conversation()
        return done or not results

    def save_conversation(self):
        path = os.path.join(self.session["output_dir"], "conversation_log.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.messages, f, indent=2, ensure_ascii=False)


def api_app(manager):
    app = Flask("api")

    @app.post("/sessions")
    def create():
        sid = manager.create_session(request.get_json(force=True))
        return jsonify({"session_id": sid, "status": "running"})

    @app.get("/sessions/<sid>")
    def status(sid):
        if sid not in manager.sessions:
            abort(404)
        return jsonify(manager.public(sid))

    @app.get("/sessions/<sid>/files")
    def files(sid):
        return jsonify(manager.sessions[sid]["files"])

    @app.get("/sessions/<sid>/files/zip")
    def zip_all(sid):
        folder = manager.files_dir(sid)
        tmp = tempfile.NamedTemporaryFile(suffix=".zip", delete=False)
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for name in sorted(os.listdir(folder)):
                z.write(os.path.join(folder, name), name)
        tmp.close()
        response = send_file(tmp.name, mimetype="application/zip", as_attachment=True, download_name=f"{sid}.zip")
        response.call_on_close(lambda: os.unlink(tmp.name))
        return response

    @app.get("/sessions/<sid>/files/<name>")
    def one_file(sid, name):
        return send_from_directory(manager.files_dir(sid), name, as_attachment=True)

    @app.get("/health")
    def health():
        return jsonify({"status": "ok"})

    return app


def worker_app(manager):
    app = Flask("worker")
    commands = manager.commands

    @app.post("/register")
    def register():
        request.get_json(force=True, silent=True)
        return jsonify({"success": True, "message": "registered"})

    @app.get("/command")
    def command():
        return jsonify(commands.get_command(LONG_POLL_S))

    @app.post("/result")
    def result():
        commands.put_result(request.get_json(force=True))
        return jsonify({"success": True})

    @app.post("/upload")
    def upload():
        sid = request.form["session_id"]
        upload = request.files["file"]
        name, size = manager.store_file(sid, request.form.get("filename") or upload.filename, upload)
        return jsonify({"success": True, "stored_as": name, "size_kb": size // 1024})

    @app.get("/health")
    def health():
        return jsonify({"status": "ok"})

    return app


def dispatch_bench(commands, count):
    """put_command → worker → result, timed as the agent sees it, once the worker polls."""
    samples = []
    for i in range(count):
        t = time.perf_counter()
        commands.put_command("run_command", {"command": f"echo {i}"})
        samples.append(time.perf_counter() - t)
    print("dispatch " + json.dumps(samples[count // 25:]), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--api-port", type=int, default=5900)
    p.add_argument("--worker-port", type=int, default=5901)
    p.add_argument("--output", default="./output")
    p.add_argument("--model-url", default="https://api.anthropic.com")
    p.add_argument("--dispatch-bench", type=int, default=0)
    args = p.parse_args()
    commands = CommandQueue()
    manager = SessionManager(args.output, args.model_url.rstrip("/"), commands)
    os.makedirs(args.output, exist_ok=True)
    threading.Thread(target=serve, args=(worker_app(manager),),
                     kwargs={"host": args.host, "port": args.worker_port}, daemon=True).start()
    if args.dispatch_bench:
        threading.Thread(target=dispatch_bench, args=(commands, args.dispatch_bench), daemon=True).start()
    serve(api_app(manager), host=args.host, port=args.api_port)


if __name__ == "__main__":
    sys.exit(main())
