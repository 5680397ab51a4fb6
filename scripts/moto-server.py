"""The moto server the tests run (scripts/with-moto.sh), with one fix to its SQS FIFO receive.

moto's ReceiveMessage hands out a message group's later message before an earlier one when
both come back from a visibility timeout (a failed batch released, a dead invocation's
messages): it drops a message whose timeout ran out from the in-flight set only when its loop
reaches it, and it decides which groups are busy from a set taken before that. The earlier
message is skipped because the later one still looks in flight; the later one is then handed
out alone. SQS never does this: a FIFO group is delivered in order. Shown by
`python scripts/moto-server.py --check` (and by tests/tests/moto_fifo.rs). The fix: messages
whose visibility ran out leave the in-flight set before a receive looks at the groups, and a
visible message never makes its group busy.
"""

import sys

from moto.sqs import models


def _in_flight_groups(queue):
    return {
        m.group_id
        for m in queue._pending_messages
        if m.group_id is not None and not m.visible
    }


_receive = models.SQSBackend.receive_message


def _receive_in_order(self, queue_name, *args, **kwargs):
    queue = self.get_queue(queue_name)
    for m in [m for m in queue._pending_messages if m.visible]:
        queue._pending_messages.discard(m)
    return _receive(self, queue_name, *args, **kwargs)


def patch():
    models.Queue.pending_message_groups = property(_in_flight_groups)
    models.SQSBackend.receive_message = _receive_in_order


def check():
    """Stock moto's misorder, and the patched order."""
    import time

    import boto3
    from moto import mock_aws

    def second_receive():
        with mock_aws():
            sqs = boto3.client("sqs", region_name="us-east-1")
            url = sqs.create_queue(QueueName="q.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
            for body in ["earlier", "later"]:
                sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId="g", MessageDeduplicationId=body)
            got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=20)["Messages"]
            for m in got:
                sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=1)
            time.sleep(1.2)
            got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=20).get("Messages", [])
            return [m["Body"] for m in got]

    stock = second_receive()
    patch()
    fixed = second_receive()
    print(f"stock moto: {stock}; patched: {fixed}")
    return fixed == ["earlier", "later"]


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        sys.exit(0 if check() else 1)
    patch()
    from moto.server import main

    sys.exit(main())
