"""Secrets of dynamic broker configs, encrypted as Kafka's EncryptingPasswordEncoder encrypts
them: a value Kafka's algorithm wrote (javax.crypto, PBKDF2WithHmacSHA512 + AES/CBC/
PKCS5Padding, made once with Java 17) reads back, and what odradek writes reads back."""

from __future__ import annotations

import pytest

from broker import password_encoder
from protocol.errors import InvalidConfigError

# javax.crypto's encryption of "ks-pass-é1" under the secret "the-secret", Kafka's layout
KAFKA_WROTE = (
    "keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC/PKCS5Padding,keyLength:"
    "128,salt:BcHeu0OxcBOENAPnMOQwnRchMJEkCleFLZxNAqSxfVBUZ8J4C79UdoteLXsSd/h/1VbJugkWIDGozAX"
    "Bhpv9k6qlLyY+94BFCEGw2cazZ0VXl4Cu0w9D54vT/1eUoBD9pQ33QVKIw3g68UaJKcMJB4JjV6WUyYNLUMK4RHp"
    "xAXP67hg8YbwrfhNedc2PqP0tv+3cYkoaii+B9VdYfLy8vwYvvLHJZIJS0G/8+LvwDBLKNWQPeNbthX2Dq7skJKK"
    "UAh0hX7qJNNdvRVSpN96Tri0e8fajY+a5O+E0iz2dqoFTc3SeSu3ZCq8saycRC+g/KQT0hEMdvh3pUBdk67nPuQ="
    "=,iterations:4096,encryptedPassword:+I4XwjE6nk/KNwu32TTzJg==,passwordLength:10,initializ"
    "ationVector:ZEtX5jAbxp9MubcX58CDKQ=="
)  # fmt: skip


def test_a_value_kafka_wrote_reads_back() -> None:
    assert password_encoder.decode(KAFKA_WROTE, "the-secret") == "ks-pass-é1"


def test_what_odradek_writes_reads_back_and_is_kafkas_layout() -> None:
    stored = password_encoder.encode("ks-pass-é1", "the-secret")
    fields = dict(item.split(":", 1) for item in stored.split(","))
    assert fields["keyFactoryAlgorithm"] == "PBKDF2WithHmacSHA512"
    assert fields["cipherAlgorithm"] == "AES/CBC/PKCS5Padding"
    assert (fields["keyLength"], fields["iterations"], fields["passwordLength"]) == (
        "128",
        "4096",
        "10",
    )
    assert "ks-pass" not in stored
    assert password_encoder.decode(stored, "the-secret") == "ks-pass-é1"
    assert password_encoder.encode("ks-pass-é1", "the-secret") != stored  # a fresh salt and IV


@pytest.mark.parametrize("stored", [KAFKA_WROTE, "garbage", "salt:x", ""])
def test_another_secret_or_damage_is_one_refusal(stored: str) -> None:
    with pytest.raises(InvalidConfigError, match="Password could not be decoded"):
        password_encoder.decode(stored, "another-secret")


def test_seal_encrypts_only_secrets_and_unseal_reads_them_back() -> None:
    config = {"listener.name.ssl.ssl.key.password": "pw", "message.max.bytes": "10"}
    stored = password_encoder.seal(config, "k")
    assert stored["message.max.bytes"] == "10" and "pw" not in stored[
        "listener.name.ssl.ssl.key.password"
    ].split(",")
    assert password_encoder.unseal(stored, "k") == (config, [])
    with pytest.raises(InvalidConfigError, match="Password encoder secret not configured"):
        password_encoder.seal(config, "")
    assert password_encoder.seal({"message.max.bytes": "10"}, "") == {"message.max.bytes": "10"}


@pytest.mark.parametrize("secret", ["another", ""])
def test_a_secret_this_broker_cannot_read_is_left_out(secret: str) -> None:
    stored = password_encoder.seal({"listener.name.ssl.ssl.key.password": "pw", "a.b": "1"}, "k")
    assert password_encoder.unseal(stored, secret) == (
        {"a.b": "1"}, ["listener.name.ssl.ssl.key.password"],
    )  # fmt: skip
