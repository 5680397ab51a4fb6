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

And one fix to its DynamoDB TransactWriteItems, for time: moto backs up every table a
transaction touches, whole (`copy.deepcopy` of the Table), to restore it if the transaction
is cancelled, so each commit costs a copy of everything stored in the tables it writes (the
processed marks grow by one per event) and a long run slows down quadratically: the soak
(scripts/soak.sh, docs/src/soak.md) went from 6 to 4 events a second within 1,000 events. The
fix backs up the items the transaction names instead (the only ones it can change) and puts
them back when it is cancelled: the same outcome, at the cost of the transaction's own items.
`python scripts/moto-server.py --check` also checks that a cancelled transaction leaves its
items as they were.
"""

import copy
import sys

from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models.table import Table
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


class _TableKeepingCopy:
    """`copy` as the DynamoDB backend's module sees it: a Table is not copied (the whole-table
    backup of transact_write_items, replaced by `_item_backups`); anything else is."""

    @staticmethod
    def deepcopy(value, memo=None):
        if isinstance(value, Table):
            return value
        return copy.deepcopy(value, memo)


def _item_backups(backend, transact_items):
    """(table, hash key, range key, a copy of the item or None) for each item the transaction
    names; an operation moto will refuse is skipped here (it changes nothing)."""
    backups = []
    for entry in transact_items:
        try:
            op_type, op = next(iter(entry.items()))
            table = backend.get_table(op["TableName"])
            if op_type == "Put":
                attrs = op["Item"]
                key = {table.hash_key_attr: attrs[table.hash_key_attr]}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = attrs[table.range_key_attr]
            else:
                key = op["Key"]
            hash_key, range_key = backend.get_keys_value(table, key)
            item = table.get_item(hash_key, range_key)
        except Exception:
            continue
        backups.append((table, hash_key, range_key, copy.deepcopy(item)))
    return backups


def _restore(backups):
    for table, hash_key, range_key, item in reversed(backups):
        if item is None:
            table.delete_item(hash_key, range_key)
        elif range_key is not None:
            table.items[hash_key][range_key] = item
        else:
            table.items[hash_key] = item


_transact_write_items = dynamodb_models.DynamoDBBackend.transact_write_items


def _transact_write_items_item_backups(self, transact_items):
    backups = _item_backups(self, transact_items)
    try:
        return _transact_write_items(self, transact_items)
    except Exception:
        _restore(backups)
        raise


def patch():
    models.Queue.pending_message_groups = property(_in_flight_groups)
    models.SQSBackend.receive_message = _receive_in_order
    dynamodb_models.copy = _TableKeepingCopy
    dynamodb_models.DynamoDBBackend.transact_write_items = _transact_write_items_item_backups


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

    def cancelled_transaction():
        """A transaction whose last item's condition fails: every item as it was."""
        with mock_aws():
            ddb = boto3.client("dynamodb", region_name="us-east-1")
            ddb.create_table(
                TableName="t",
                KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )
            ddb.put_item(TableName="t", Item={"id": {"S": "a"}, "v": {"N": "1"}})
            ddb.put_item(TableName="t", Item={"id": {"S": "b"}, "v": {"N": "1"}})
            try:
                ddb.transact_write_items(
                    TransactItems=[
                        {"Put": {"TableName": "t", "Item": {"id": {"S": "a"}, "v": {"N": "2"}}}},
                        {"Put": {"TableName": "t", "Item": {"id": {"S": "c"}, "v": {"N": "2"}}}},
                        {
                            "Put": {
                                "TableName": "t",
                                "Item": {"id": {"S": "b"}, "v": {"N": "2"}},
                                "ConditionExpression": "attribute_not_exists(id)",
                            }
                        },
                    ]
                )
                return "not cancelled"
            except ddb.exceptions.TransactionCanceledException:
                pass
            items = ddb.scan(TableName="t")["Items"]
            return sorted((i["id"]["S"], i["v"]["N"]) for i in items)

    stock = second_receive()
    stock_transaction = cancelled_transaction()
    patch()
    fixed = second_receive()
    fixed_transaction = cancelled_transaction()
    print(f"stock moto: {stock}; patched: {fixed}")
    print(f"a cancelled transaction: stock moto {stock_transaction}; patched {fixed_transaction}")
    return fixed == ["earlier", "later"] and fixed_transaction == [("a", "1"), ("b", "1")]


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        sys.exit(0 if check() else 1)
    patch()
    from moto.server import main

    sys.exit(main())
