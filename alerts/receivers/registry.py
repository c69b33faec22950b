"""The receiver registry: one module per receiver type, registered by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from alerts.base import Receiver
from monitor.common.registry import Registry
from monitor.config.alerts import ReceiverConfig
from monitor.errors import ConfigError

ReceiverFactory = Callable[[ReceiverConfig, Mapping[str, str]], Receiver]

RECEIVERS: Registry[ReceiverFactory] = Registry("receiver type")


def register(type_name: str) -> Callable[[ReceiverFactory], ReceiverFactory]:
    """Register a receiver factory under `type_name`; registering a name twice raises."""

    def decorator(factory: ReceiverFactory) -> ReceiverFactory:
        return RECEIVERS.add(type_name, factory)

    return decorator


def receiver_types() -> list[str]:
    """Registered receiver type names."""
    return RECEIVERS.names()


def build_receiver(config: ReceiverConfig, env: Mapping[str, str]) -> Receiver:
    """Instantiate a configured receiver; RegistryError lists the valid types."""
    return RECEIVERS.lookup(config.type)(config, env)


def read_env(env: Mapping[str, str], name: str, receiver: str, key: str) -> str:
    """The value of a required environment variable named in a receiver's config."""
    value = env.get(name)
    if not value:
        raise ConfigError(
            f"alerts.receivers '{receiver}': environment variable {name} ({key}) is not set"
        )
    return value
