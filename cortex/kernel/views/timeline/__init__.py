"""A case's history as ordered cards: `page` (the use case), `cards`, `query`, `index`, `fast`."""
