"""Stand-in actions for examples/order.stm when it runs under harel Python (`harel run`
imports them from the .stm file's folder). They do nothing and return None: exactly what
the Rust `harel run` does with an action that has no implementation, so both print the same
steps. A real deployment binds these names to actions that talk to the stock and mail
services."""


def reserve_stock(stm, event, **inputs):
    return None


def release_stock(stm, event, **inputs):
    return None


def notify_customer(stm, event, **inputs):
    return None
