"""The APIs as data: message JSON files (messages/), the API table (table.py), the request
validators and response shaper built from the files (loader.py), the one error-response builder
(errors.py) and Kafka's per-message rules as named hooks (hooks.py). See docs/architecture.md."""
