"""Secrets in dynamic broker configs, encrypted as Kafka's EncryptingPasswordEncoder does (pure).

Kafka in ZooKeeper mode keeps a dynamic password config (`listener.name.<l>.ssl.keystore.
password`, ...) in `/config/brokers/<id>` encrypted with the brokers' static
`password.encoder.secret`, and refuses one when that secret is not configured ("Password encoder
secret not configured"). The stored text is Kafka's, so a Kafka broker given the same secret
reads what odradek wrote and the other way round:

    keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC/PKCS5Padding,keyLength:128,
    salt:<base64 of 256 random bytes>,iterations:4096,encryptedPassword:<base64>,
    passwordLength:<characters>,initializationVector:<base64>

The key is PBKDF2-HMAC-SHA512 (or -SHA1, as written in the record) of the secret over the
salt; the cipher AES in CBC mode with PKCS#5 padding, Kafka's default (AES/GCM/NoPadding records
are read too: their IV). AES comes from `cryptography`.

`seal` and `unseal` apply it to a dynamic config set: its secrets (broker/dynamic_config.py
`is_secret`) encrypted before it is written, decrypted after it is read. Without a secret a
password is refused, as Kafka refuses it; one that cannot be decrypted is left out of what is
read (and logged by the caller), as Kafka's DynamicBrokerConfig leaves it out.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from broker.dynamic_config import is_secret
from protocol.errors import InvalidConfigError

KEY_FACTORY = "PBKDF2WithHmacSHA512"
CIPHER = "AES/CBC/PKCS5Padding"
KEY_LENGTH = 128
ITERATIONS = 4096
SALT_BYTES = 256
_HASHES = {"PBKDF2WithHmacSHA512": "sha512", "PBKDF2WithHmacSHA1": "sha1"}


def encode(password: str, secret: str) -> str:
    """`password` as Kafka stores it, encrypted under `secret` with a fresh salt and IV."""
    salt, iv = os.urandom(SALT_BYTES), os.urandom(16)
    key = _key(secret, KEY_FACTORY, salt, ITERATIONS, KEY_LENGTH)
    padder = padding.PKCS7(128).padder()
    plain = padder.update(password.encode()) + padder.finalize()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    encrypted = encryptor.update(plain) + encryptor.finalize()
    fields = {
        "keyFactoryAlgorithm": KEY_FACTORY, "cipherAlgorithm": CIPHER,
        "keyLength": str(KEY_LENGTH), "salt": _b64(salt), "iterations": str(ITERATIONS),
        "encryptedPassword": _b64(encrypted), "passwordLength": str(_java_length(password)),
        "initializationVector": _b64(iv),
    }  # fmt: skip
    return ",".join(f"{k}:{v}" for k, v in fields.items())


def decode(encoded: str, secret: str) -> str:
    """The password `encode` (or a Kafka broker) stored; InvalidConfigError when it cannot be
    read with `secret` (another secret, a damaged value), as Kafka's "Password could not be
    decoded"."""
    try:
        params = dict(item.split(":", 1) for item in encoded.split(","))
        cipher = params["cipherAlgorithm"]
        key = _key(secret, params["keyFactoryAlgorithm"], base64.b64decode(params["salt"]),
                   int(params["iterations"]), int(params["keyLength"]))  # fmt: skip
        data = base64.b64decode(params["encryptedPassword"])
        iv = base64.b64decode(params["initializationVector"])
        if cipher.startswith("AES/GCM/"):
            plain = AESGCM(key).decrypt(iv, data, None)
        elif cipher == CIPHER:
            decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
            padded = decryptor.update(data) + decryptor.finalize()
            unpadder = padding.PKCS7(128).unpadder()
            plain = unpadder.update(padded) + unpadder.finalize()
        else:
            raise ValueError(f"cipher {cipher} is not supported")
        password = plain.decode()
        if _java_length(password) != int(params["passwordLength"]):
            raise ValueError("sanity check of length failed")
    except Exception as exc:  # any damage is the one refusal
        raise InvalidConfigError(f"Password could not be decoded: {exc}") from None
    return password


def seal(config: Mapping[str, str], secret: str) -> dict[str, str]:
    """`config` as stored: each secret encrypted (`secret` "": InvalidConfigError, Kafka's
    "Password encoder secret not configured")."""
    out = dict(config)
    for name, value in config.items():
        if is_secret(name):
            if not secret:
                raise InvalidConfigError(
                    f"{name}: Password encoder secret not configured (password.encoder.secret "
                    "in every broker's settings; a password is never stored in the clear)"
                )
            out[name] = encode(value, secret)
    return out


def unseal(stored: Mapping[str, str], secret: str) -> tuple[dict[str, str], list[str]]:
    """(the config with its secrets decrypted, the names left out: not decodable with
    `secret`, or no secret configured)."""
    out, dropped = dict(stored), []
    for name, value in stored.items():
        if not is_secret(name):
            continue
        try:
            if not secret:
                raise InvalidConfigError("no password.encoder.secret")
            out[name] = decode(value, secret)
        except InvalidConfigError:
            del out[name]
            dropped.append(name)
    return out, dropped


def _key(secret: str, factory: str, salt: bytes, iterations: int, bits: int) -> bytes:
    if factory not in _HASHES:
        raise ValueError(f"key factory {factory} is not supported")
    return hashlib.pbkdf2_hmac(_HASHES[factory], secret.encode(), salt, iterations, bits // 8)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _java_length(text: str) -> int:
    """Java's String.length(): UTF-16 code units, as Kafka writes `passwordLength`."""
    return len(text.encode("utf-16-le")) // 2
