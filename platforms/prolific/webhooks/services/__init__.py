"""Prolific's webhooks as state: the subscriptions (``subscriptions``) and the deliveries received (``deliveries``)."""
