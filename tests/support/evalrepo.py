"""A small git repository whose history holds commits that satisfy the eval's task rules."""

from __future__ import annotations

from pathlib import Path

from tests.support.git import commit_all, git, init_repo

__all__ = ["make_eval_repo", "TASK_MESSAGES"]

_FILES = {
    "shop/cart.py": (
        "\"\"\"The shopping cart.\"\"\"\n\n\nclass Cart:\n    \"\"\"Items and their quantities.\"\"\"\n\n"
        "    def __init__(self) -> None:\n        self.items: dict[str, int] = {}\n\n"
        "    def add(self, sku: str, qty: int = 1) -> None:\n        self.items[sku] = self.items.get(sku, 0) + qty\n\n"
        "    def total_quantity(self) -> int:\n        return sum(self.items.values())\n"
    ),
    "shop/pricing.py": (
        "\"\"\"Prices and discounts.\"\"\"\n\nPRICES = {\"apple\": 3, \"pear\": 4}\n\n\n"
        "def unit_price(sku: str) -> int:\n    return PRICES[sku]\n\n\n"
        "def discount(total: int) -> int:\n    if total > 100:\n        return total // 10\n    return 0\n"
    ),
    "shop/shipping.py": (
        "\"\"\"Shipping fees by weight.\"\"\"\n\n\ndef shipping_fee(weight_kg: float) -> int:\n"
        "    if weight_kg < 1:\n        return 5\n    return 5 + int(weight_kg) * 2\n"
    ),
    "README.md": "# shop\n",
}

#: the commit messages of the task commits, oldest first (each modifies one existing source file)
TASK_MESSAGES = (
    "Reject negative quantities when adding items to the shopping basket",
    "Give a bigger discount to large orders above two hundred units of money",
    "Make heavy parcels cost more to ship than light parcels do today",
    "Count distinct products separately from the total number of units",
)


def _edit(root: Path, path: str, old: str, new: str) -> None:
    file = root / path
    text = file.read_text()
    assert old in text, (path, old)
    file.write_text(text.replace(old, new))


def make_eval_repo(root: Path) -> list[str]:
    """Create the repository at ``root``; the task commits' ids, oldest first."""
    root.mkdir(parents=True, exist_ok=True)
    init_repo(root)
    for path, text in _FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    commit_all(root, "Initial shop with cart pricing and shipping modules")
    edits = (
        ("shop/cart.py", "    def add(self, sku: str, qty: int = 1) -> None:\n",
         "    def add(self, sku: str, qty: int = 1) -> None:\n        if qty < 0:\n"
         "            raise ValueError(\"quantity must be positive\")\n"),
        ("shop/pricing.py", "    if total > 100:\n        return total // 10\n",
         "    if total > 200:\n        return total // 5\n    if total > 100:\n        return total // 10\n"),
        ("shop/shipping.py", "    return 5 + int(weight_kg) * 2\n", "    return 5 + int(weight_kg) * 3\n"),
        ("shop/cart.py", "    def total_quantity(self) -> int:\n",
         "    def distinct(self) -> int:\n        return len(self.items)\n\n    def total_quantity(self) -> int:\n"),
    )
    shas = []
    for (path, old, new), message in zip(edits, TASK_MESSAGES, strict=True):
        _edit(root, path, old, new)
        shas.append(commit_all(root, message))
    (root / "README.md").write_text("# shop\n\nA tiny shop.\n")
    commit_all(root, "Describe the shop in the readme for new readers")  # no source file: not a task
    git(root, "log", "--oneline")
    return shas
