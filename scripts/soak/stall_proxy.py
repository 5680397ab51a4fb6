"""A loopback proxy in front of moto that answers one request slowly (docs/src/soak.md, "The one
failed record").

It forwards every request to moto and its answer back, except the Nth PutItem on a table
whose name ends with --table-suffix: that answer's status line and headers go back at once
and its body --seconds later (--mode body, a server stalled mid-answer), or the whole answer
--seconds later (--mode all). moto's server closes each connection after one answer, so one
connection is one request.

    python scripts/soak/stall_proxy.py --port 45999 --upstream http://127.0.0.1:PORT \\
        [--nth 50] [--seconds 6] [--mode body|all] [--table-suffix _idempotency]

Standard library only. Each stall prints one line.
"""

import argparse
import json
import socket
import threading
import time
import urllib.parse


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True, help="where to listen (loopback)")
    p.add_argument("--upstream", required=True, help="moto's URL")
    p.add_argument("--nth", type=int, default=50, help="which PutItem on the table to stall")
    p.add_argument("--seconds", type=float, default=6.0, help="how long")
    p.add_argument("--mode", choices=["body", "all"], default="body")
    p.add_argument("--table-suffix", default="_idempotency")
    return p.parse_args()


def read_request(conn):
    """The request's head and body (by Content-Length); (None, None) when the client left."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None, None
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head, body


class Proxy:
    def __init__(self, args):
        self.args = args
        url = urllib.parse.urlsplit(args.upstream)
        self.upstream = (url.hostname, url.port)
        self.puts = 0
        self.lock = threading.Lock()

    def is_the_one(self, head, body):
        target = b""
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"x-amz-target":
                target = value.strip()
        if not target.endswith(b".PutItem"):
            return False
        try:
            table = json.loads(body).get("TableName", "")
        except ValueError:
            return False
        if not table.endswith(self.args.table_suffix):
            return False
        with self.lock:
            self.puts += 1
            return self.puts == self.args.nth

    def handle(self, conn):
        try:
            head, body = read_request(conn)
            if head is None:
                return
            stall = self.is_the_one(head, body)
            with socket.create_connection(self.upstream) as up:
                up.sendall(head + b"\r\n\r\n" + body)
                answer = b""
                while chunk := up.recv(65536):
                    answer += chunk
            if not stall:
                conn.sendall(answer)
                return
            answer_head, _, answer_body = answer.partition(b"\r\n\r\n")
            status = answer_head.split(b"\r\n")[0].decode()
            print(
                f"{time.strftime('%H:%M:%S')} PutItem #{self.args.nth} on "
                f"*{self.args.table_suffix} ({status}): {self.args.mode} held "
                f"{self.args.seconds} s",
                flush=True,
            )
            if self.args.mode == "body":
                conn.sendall(answer_head + b"\r\n\r\n")
                time.sleep(self.args.seconds)
                conn.sendall(answer_body)
            else:
                time.sleep(self.args.seconds)
                conn.sendall(answer)
        except OSError as e:
            print(f"{time.strftime('%H:%M:%S')} connection error: {e}", flush=True)
        finally:
            conn.close()

    def serve(self):
        server = socket.create_server(("127.0.0.1", self.args.port))
        server.listen(128)
        print(f"stall proxy :{self.args.port} -> {self.args.upstream}", flush=True)
        while True:
            conn, _ = server.accept()
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    Proxy(parse_args()).serve()
