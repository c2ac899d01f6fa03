#!/usr/bin/env python3
"""A guest agent for turnhost in Python, standard library only (AGENT.md §6).

ACP is JSON-RPC 2.0, one JSON object per line, over stdin and stdout. This agent:
  - keeps each session's transcript in a file, so `session/load` brings it back after a crash;
  - replies to a prompt by echoing it, streamed as two `agent_message_chunk`s;
  - for `run <command>`, asks permission (`session/request_permission`) and, if allowed, runs the
    command in the session's folder and shows its output as a tool call;
  - for `history`, lists the prompts the session has seen;
  - takes images (`promptCapabilities.image`; not with `--no-images`) and reads the files its prompts
    link to (turnhost writes them in the session's folder, PROTOCOL.md §2.4), saying what it got.
Replace `reply()` with your own agent: call your model, use your tools, stream what you write.

Run it under turnhost with an agent.json of {"acp": {"command": "python3", "args": ["acp-guest.py"]}}.
"""
import base64
import json
import os
import subprocess
import sys
import uuid

STATE_DIR = os.environ.get("GUEST_STATE_DIR", os.path.expanduser("~/.acp-guest"))
sessions = {}  # session id -> {"cwd": ..., "prompts": [...]}
next_id = 0


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def read():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)  # the client closed our stdin: we are done
    return json.loads(line)


def request(method, params):
    """Sends a request to the client and waits for its answer; notifications meanwhile are handled."""
    global next_id
    next_id += 1
    send({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params})
    while True:
        message = read()
        if message.get("id") == next_id and "method" not in message:
            return message.get("result")
        handle(message)


def update(session_id, what):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": what}})


def say(session_id, text):
    update(session_id, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def save(session_id):
    os.makedirs(STATE_DIR, exist_ok=True)
    with open(os.path.join(STATE_DIR, session_id + ".json"), "w") as f:
        json.dump(sessions[session_id], f)


def load(session_id):
    with open(os.path.join(STATE_DIR, session_id + ".json")) as f:
        return json.load(f)


def run_tool(session_id, command):
    call = {"toolCallId": "call-" + uuid.uuid4().hex[:8], "title": command, "kind": "execute", "rawInput": {"command": command}}
    update(session_id, dict(call, sessionUpdate="tool_call", status="pending"))
    answer = request("session/request_permission", {
        "sessionId": session_id,
        "toolCall": dict(call, status="pending"),
        "options": [
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ],
    })
    outcome = (answer or {}).get("outcome", {})
    if outcome.get("optionId") != "allow":
        update(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": call["toolCallId"], "status": "failed"})
        return "not allowed to run " + command
    done = subprocess.run(command, shell=True, cwd=sessions[session_id]["cwd"], capture_output=True, text=True, timeout=60)
    output = (done.stdout + done.stderr).strip()
    update(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": call["toolCallId"], "status": "completed",
                        "content": [{"type": "content", "content": {"type": "text", "text": output}}]})
    return "ran " + command + ": " + output


def block_text(block):
    """A prompt's block as this agent reads it: text as it is, a file by what it holds."""
    kind = block.get("type")
    if kind == "image":
        return "[image %s %d bytes]" % (block["mimeType"], len(base64.b64decode(block["data"])))
    if kind == "resource_link" and block.get("uri", "").startswith("file://"):
        with open(block["uri"][len("file://"):], "rb") as f:
            return "[file %s %d bytes]" % (block["name"], len(f.read()))
    if kind == "resource_link":
        return "[link %s]" % block.get("uri", "")
    return block.get("text", "")


def reply(session_id, prompt):
    if prompt.startswith("run "):
        return run_tool(session_id, prompt[4:])
    if prompt == "history":
        return "seen: " + " | ".join(sessions[session_id]["prompts"])
    return "python guest: " + prompt


def handle(message):
    method, params, rid = message.get("method"), message.get("params") or {}, message.get("id")
    if method == "initialize":
        capabilities = {"loadSession": True, "promptCapabilities": {"image": "--no-images" not in sys.argv}}
        result = {"protocolVersion": 1, "agentCapabilities": capabilities, "agentInfo": {"name": "python-guest", "version": "1.0"}}
    elif method == "session/new":
        session_id = uuid.uuid4().hex
        sessions[session_id] = {"cwd": params["cwd"], "prompts": []}
        save(session_id)
        result = {"sessionId": session_id}
    elif method == "session/load":
        session_id = params["sessionId"]
        try:
            sessions[session_id] = dict(load(session_id), cwd=params["cwd"])
        except FileNotFoundError:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32002, "message": "no such session: " + session_id}})
            return
        for prompt in sessions[session_id]["prompts"]:
            update(session_id, {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": prompt}})
        result = {}
    elif method == "session/prompt":
        session_id = params["sessionId"]
        prompt = "\n".join(block_text(block) for block in params["prompt"])
        sessions[session_id]["prompts"].append(prompt)
        save(session_id)
        text = reply(session_id, prompt)
        half = len(text) // 2
        say(session_id, text[:half])
        say(session_id, text[half:])
        result = {"stopReason": "end_turn"}
    elif method == "session/cancel":
        return  # a notification; this agent's turns are short
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found: " + str(method)}})
        return
    else:
        return
    send({"jsonrpc": "2.0", "id": rid, "result": result})


if __name__ == "__main__":
    while True:
        handle(read())
