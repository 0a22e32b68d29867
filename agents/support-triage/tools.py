"""Tools of the support-triage example agent (plain callables work as well as LangChain tools)."""


def lookup_order(order_id: str) -> str:
    """Look up an order by its number and return its status."""
    orders = {"1001": "shipped on Monday", "1002": "waiting for payment"}
    return orders.get(order_id.strip().lstrip("#"), f"no order {order_id}")
