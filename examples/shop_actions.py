"""Stand-in actions for examples/shop_order.stm when it runs under harel Python (`harel run`
imports them from the .stm file's folder). They do nothing and return None: exactly what
the Rust `harel run` does with an action that has no implementation, so both print the same
steps. The functions bind these names to the Rust actions of functions/app/src/shop.rs
(pricing, stock held and released, payment attempts, parcel, invoice, cleanup)."""


def _stand_in(stm, event, **inputs):
    return None


price_order = _stand_in
reserve_stock = _stand_in
request_payment = _stand_in
record_payment = _stand_in
pick_items = _stand_in
pack_parcel = _stand_in
issue_invoice = _stand_in
dispatch = _stand_in
release_stock = _stand_in
cancel_cleanup = _stand_in
