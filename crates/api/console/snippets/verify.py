# pip install standardwebhooks
from standardwebhooks.webhooks import Webhook


def verify(secret: str, raw_body: bytes, headers: dict) -> dict:
    """Returns the parsed payload; raises if the signature or the timestamp is wrong.

    secret: the webhook's "whsec_..." secret; raw_body: the request body exactly as
    received, before any JSON parsing; headers: the request's headers. During a secret
    rotation either secret verifies.
    """
    return Webhook(secret).verify(raw_body, headers)
