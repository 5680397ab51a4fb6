//! What a DynamoDB request is billed, in capacity units, computed from the request and its
//! answer as they went over the wire (moto's own `ConsumedCapacity` is a constant per
//! operation, so it cannot be used).
//!
//! DynamoDB's rules, as its developer guide states them:
//! - an item's size is the sum of its attribute names and values ([`item_size`]);
//! - a read is one unit per 4 KB step of each item read, half that eventually consistent
//!   (the default), twice that in a transaction; a read that finds no item costs the minimum
//!   step; a Query or Scan sums the items before rounding (one step at least);
//! - a write is one unit per 1 KB step of the item, twice that in a transaction; a failed
//!   conditional write is billed as if it had written.
//!
//! What the wire does not show is priced at its lower bound, the same for every client: a
//! Query or Scan by the items it returned (a filter's or projection's dropped bytes are
//! unseen), an UpdateItem by its key and new values, a DeleteItem at one step unless it
//! returned the old item, a PutItem by the new item (not the larger old one).

use serde_json::Value;

/// Capacity units one request consumed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Units {
    /// Read capacity units (0.5 steps: an eventually consistent 4 KB read).
    pub read: f64,
    /// Write capacity units (1 KB steps, doubled in a transaction).
    pub write: f64,
}

/// The size DynamoDB bills an item (a map of typed attribute values, as on the wire) by:
/// attribute names plus values (UTF-8 bytes for a string, about one byte per two significant
/// digits plus one for a number, the decoded bytes of a binary, 3 bytes plus one per element
/// and the elements for a list or map).
pub fn item_size(item: &Value) -> usize {
    item.as_object()
        .map(|m| m.iter().map(|(k, v)| k.len() + value_size(v)).sum())
        .unwrap_or(0)
}

fn value_size(v: &Value) -> usize {
    let Some((ty, inner)) = v.as_object().and_then(|m| m.iter().next()) else {
        return 0;
    };
    match (ty.as_str(), inner) {
        ("S", Value::String(s)) => s.len(),
        ("N", Value::String(n)) => number_size(n),
        ("B", Value::String(b)) => b.trim_end_matches('=').len() * 3 / 4,
        ("SS", Value::Array(v)) => v.iter().filter_map(Value::as_str).map(str::len).sum(),
        ("NS", Value::Array(v)) => v.iter().filter_map(Value::as_str).map(number_size).sum(),
        ("BS", Value::Array(v)) => v
            .iter()
            .filter_map(Value::as_str)
            .map(|b| b.trim_end_matches('=').len() * 3 / 4)
            .sum(),
        ("M", Value::Object(m)) => {
            3 + m
                .iter()
                .map(|(k, v)| 1 + k.len() + value_size(v))
                .sum::<usize>()
        }
        ("L", Value::Array(l)) => 3 + l.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        _ => 1,
    }
}

fn number_size(n: &str) -> usize {
    let mantissa = n.split(['e', 'E']).next().unwrap_or(n);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let significant = digits.trim_start_matches('0').trim_end_matches('0');
    significant.len().div_ceil(2) + 1
}

/// Steps of `per` bytes in `size`, one at least.
fn steps(size: usize, per: usize) -> f64 {
    size.div_ceil(per).max(1) as f64
}

/// 1 for a strongly consistent read, 0.5 otherwise.
fn consistency(req: &Value) -> f64 {
    if req["ConsistentRead"].as_bool() == Some(true) {
        1.0
    } else {
        0.5
    }
}

/// The key and the values an update sets: its new item's lower bound.
fn update_size(update: &Value) -> usize {
    let values = update["ExpressionAttributeValues"]
        .as_object()
        .map(|m| m.values().map(value_size).sum::<usize>())
        .unwrap_or(0);
    item_size(&update["Key"]) + values
}

/// Write units of one Put, Update, Delete or condition check (outside a transaction).
fn write_steps(action: &str, body: &Value) -> f64 {
    match action {
        "Put" | "PutRequest" => steps(item_size(&body["Item"]), 1024),
        "Update" => steps(update_size(body), 1024),
        _ => 1.0,
    }
}

/// Whether the service answered `status` with an error it bills like the request had
/// succeeded: a failed condition (the write was evaluated against the item).
fn billed_failure(answer: Option<&Value>) -> bool {
    let kind = answer
        .and_then(|a| a["__type"].as_str())
        .unwrap_or_default();
    kind.ends_with("ConditionalCheckFailedException")
        || kind.ends_with("TransactionCanceledException")
}

/// The units of one DynamoDB request, from its JSON body and its answer's (`None`: no
/// answer seen). A request the service refused (other than on a condition) consumed nothing.
pub fn units(
    operation: &str,
    status: Option<u16>,
    request: &Value,
    answer: Option<&Value>,
) -> Units {
    let ok = status == Some(200);
    if !ok && !billed_failure(answer) {
        return Units::default();
    }
    let null = Value::Null;
    let resp = if ok { answer.unwrap_or(&null) } else { &null };
    let req = request;
    let read = |r| Units {
        read: r,
        write: 0.0,
    };
    let write = |w| Units {
        read: 0.0,
        write: w,
    };
    match operation {
        "GetItem" => read(steps(item_size(&resp["Item"]), 4096) * consistency(req)),
        "BatchGetItem" => {
            let mut units = 0.0;
            for (table, asked) in req["RequestItems"].as_object().into_iter().flatten() {
                let factor = consistency(asked);
                let keys = asked["Keys"].as_array().map_or(0, Vec::len);
                let unprocessed = resp["UnprocessedKeys"][table]["Keys"]
                    .as_array()
                    .map_or(0, Vec::len);
                let got = resp["Responses"][table].as_array();
                let found = got.map_or(0, Vec::len);
                units += got
                    .into_iter()
                    .flatten()
                    .map(|item| steps(item_size(item), 4096) * factor)
                    .sum::<f64>();
                // a key that found nothing still costs the minimum
                units += keys.saturating_sub(unprocessed + found) as f64 * factor;
            }
            read(units)
        }
        "Query" | "Scan" => {
            let total: usize = resp["Items"]
                .as_array()
                .map(|items| items.iter().map(item_size).sum())
                .unwrap_or(0);
            read(steps(total, 4096) * consistency(req))
        }
        "TransactGetItems" => read(
            req["TransactItems"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, _)| 2.0 * steps(item_size(&resp["Responses"][i]["Item"]), 4096))
                .sum(),
        ),
        "PutItem" => write(write_steps("Put", req)),
        "UpdateItem" => write(match resp["Attributes"].as_object() {
            Some(_) if req["ReturnValues"] == "ALL_NEW" || req["ReturnValues"] == "ALL_OLD" => {
                steps(item_size(&resp["Attributes"]), 1024).max(write_steps("Update", req))
            }
            _ => write_steps("Update", req),
        }),
        "DeleteItem" => write(match resp["Attributes"].as_object() {
            Some(_) => steps(item_size(&resp["Attributes"]), 1024),
            None => 1.0,
        }),
        "BatchWriteItem" => {
            let mut units = 0.0;
            for (table, writes) in req["RequestItems"].as_object().into_iter().flatten() {
                let unprocessed = resp["UnprocessedItems"][table]
                    .as_array()
                    .map_or(0, Vec::len);
                let all: Vec<f64> = writes
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|w| match w.get("PutRequest") {
                        Some(p) => write_steps("PutRequest", p),
                        None => 1.0,
                    })
                    .collect();
                // which ones came back unprocessed the answer says by content; price the
                // cheapest that many as not written (a lower bound)
                let mut sorted = all.clone();
                sorted.sort_by(f64::total_cmp);
                units += sorted.iter().skip(unprocessed).sum::<f64>();
            }
            write(units)
        }
        "TransactWriteItems" => write(
            req["TransactItems"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t.as_object()?.iter().next())
                .map(|(action, body)| 2.0 * write_steps(action, body))
                .sum(),
        ),
        _ => Units::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sizes_follow_dynamodb_rules() {
        // "id" (2) + "abc" (3); "n" (1) + 12345 (3 digit pairs + 1 = 4)
        assert_eq!(
            item_size(&json!({"id": {"S": "abc"}, "n": {"N": "12345"}})),
            10
        );
        // a number's leading and trailing zeros are not significant
        assert_eq!(number_size("1000"), 2);
        assert_eq!(number_size("0.5"), 2);
        // a map: 3 + per entry 1 + name + value
        assert_eq!(value_size(&json!({"M": {"a": {"S": "xy"}}})), 3 + 1 + 1 + 2);
        assert_eq!(value_size(&json!({"BOOL": true})), 1);
    }

    #[test]
    fn reads_are_4k_steps_halved_unless_consistent() {
        let small = json!({"Item": {"id": {"S": "x"}}});
        let eventual = units("GetItem", Some(200), &json!({}), Some(&small));
        assert_eq!(
            eventual,
            Units {
                read: 0.5,
                write: 0.0
            }
        );
        let strong = units(
            "GetItem",
            Some(200),
            &json!({"ConsistentRead": true}),
            Some(&json!({})),
        );
        assert_eq!(strong.read, 1.0, "a miss costs the minimum");
        let big = json!({"Item": {"d": {"S": "x".repeat(4096)}}});
        assert_eq!(
            units("GetItem", Some(200), &json!({}), Some(&big)).read,
            1.0
        );
        // a Query sums before rounding
        let items =
            json!({"Items": [{"d": {"S": "x".repeat(2000)}}, {"d": {"S": "x".repeat(2000)}}]});
        assert_eq!(
            units("Query", Some(200), &json!({}), Some(&items)).read,
            0.5
        );
        assert_eq!(
            units("Scan", Some(200), &json!({}), Some(&json!({"Items": []}))).read,
            0.5
        );
    }

    #[test]
    fn batch_gets_price_each_key() {
        let req = json!({"RequestItems": {
            "e": {"Keys": [{"id": {"S": "a"}}], "ConsistentRead": true},
            "p": {"Keys": [{"id": {"S": "a"}}]},
        }});
        let resp = json!({"Responses": {"e": [{"id": {"S": "a"}}], "p": []}});
        assert_eq!(
            units("BatchGetItem", Some(200), &req, Some(&resp)).read,
            1.5
        );
    }

    #[test]
    fn writes_are_1k_steps_doubled_in_a_transaction() {
        let put = |n: usize| json!({"Item": {"d": {"S": "x".repeat(n)}}});
        assert_eq!(
            units("PutItem", Some(200), &put(10), Some(&json!({}))).write,
            1.0
        );
        assert_eq!(
            units("PutItem", Some(200), &put(1100), Some(&json!({}))).write,
            2.0
        );
        let tx = json!({"TransactItems": [
            {"Put": put(10)},
            {"Delete": {"Key": {"id": {"S": "a"}}}},
            {"Update": {"Key": {"id": {"S": "a"}}, "ExpressionAttributeValues": {":d": {"S": "x".repeat(1500)}}}},
        ]});
        assert_eq!(
            units("TransactWriteItems", Some(200), &tx, Some(&json!({}))).write,
            2.0 + 2.0 + 4.0
        );
        // a failed condition is billed; another refusal is not
        let failed =
            json!({"__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException"});
        assert_eq!(
            units("PutItem", Some(400), &put(10), Some(&failed)).write,
            1.0
        );
        let throttled = json!({"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException"});
        assert_eq!(
            units("PutItem", Some(400), &put(10), Some(&throttled)).write,
            0.0
        );
    }
}
