"""Confluent's Schema Registry errors: an HTTP status and an `error_code`, in one exception.

Confluent answers `{"error_code": 40401, "message": "Subject 'x' not found."}`; the codes are
its own (Errors.java): 404xx not found, 409 incompatible, 422xx invalid input, 500xx the
store. What odradek's registry does not do is 501 with error_code 50101 (not Confluent's:
it has no such answer, it does everything it documents).
"""

from __future__ import annotations


class RegistryError(Exception):
    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.error_code, self.message = status, error_code, message

    def body(self) -> dict[str, object]:
        return {"error_code": self.error_code, "message": self.message}

    @classmethod
    def subject_not_found(cls, subject: str) -> RegistryError:
        return cls(404, 40401, f"Subject '{subject}' not found.")

    @classmethod
    def version_not_found(cls, subject: str, version: object) -> RegistryError:
        return cls(404, 40402, f"Version {version} not found for subject '{subject}'.")

    @classmethod
    def schema_not_found(cls, what: str = "Schema not found") -> RegistryError:
        return cls(404, 40403, what)

    @classmethod
    def subject_soft_deleted(cls, subject: str) -> RegistryError:
        return cls(404, 40404, f"Subject '{subject}' was soft deleted. Set permanent=true "
                               "to delete permanently")  # fmt: skip

    @classmethod
    def subject_not_soft_deleted(cls, subject: str) -> RegistryError:
        return cls(404, 40405, f"Subject '{subject}' was not deleted first before being "
                               "permanently deleted")  # fmt: skip

    @classmethod
    def version_soft_deleted(cls, subject: str, version: int) -> RegistryError:
        return cls(404, 40406, f"Subject '{subject}' Version {version} was soft deleted. "
                               "Set permanent=true to delete permanently")  # fmt: skip

    @classmethod
    def version_not_soft_deleted(cls, subject: str, version: int) -> RegistryError:
        return cls(404, 40407, f"Subject '{subject}' Version {version} was not deleted first "
                               "before being permanently deleted")  # fmt: skip

    @classmethod
    def subject_config_not_found(cls, subject: str) -> RegistryError:
        return cls(404, 40408, f"Subject '{subject}' does not have subject-level "
                               "compatibility configured")  # fmt: skip

    @classmethod
    def subject_mode_not_found(cls, subject: str) -> RegistryError:
        return cls(404, 40409, f"Subject '{subject}' does not have subject-level mode "
                               "configured")  # fmt: skip

    @classmethod
    def incompatible(cls, messages: list[str]) -> RegistryError:
        return cls(409, 409, "Schema being registered is incompatible with an earlier schema "
                             "for subject: " + "; ".join(messages))  # fmt: skip

    @classmethod
    def invalid_schema(cls, message: str) -> RegistryError:
        return cls(422, 42201, message)

    @classmethod
    def invalid_version(cls, version: object) -> RegistryError:
        return cls(422, 42202, "The specified version '" + str(version) + "' is not a valid "
                               "version id. Allowed values are between [1, 2^31-1] and the "
                               "string \"latest\"")  # fmt: skip

    @classmethod
    def invalid_level(cls, level: object) -> RegistryError:
        return cls(422, 42203, f"Invalid compatibility level. Valid values are none, backward, "
                               f"forward, full, backward_transitive, forward_transitive, and "
                               f"full_transitive (got {level!r})")  # fmt: skip

    @classmethod
    def invalid_mode(cls, mode: object) -> RegistryError:
        return cls(422, 42204, f"Invalid mode. Valid values are READWRITE, READONLY and "
                               f"IMPORT (got {mode!r})")  # fmt: skip

    @classmethod
    def not_permitted(cls, message: str) -> RegistryError:
        return cls(422, 42205, message)

    @classmethod
    def reference_exists(cls, message: str) -> RegistryError:
        return cls(422, 42206, message)

    @classmethod
    def store(cls, message: str) -> RegistryError:
        return cls(500, 50001, message)

    @classmethod
    def timeout(cls, message: str) -> RegistryError:
        return cls(500, 50002, message)

    @classmethod
    def forwarding_failed(cls, message: str) -> RegistryError:
        return cls(500, 50003, message)

    @classmethod
    def unknown_leader(cls, message: str) -> RegistryError:
        return cls(500, 50004, message)

    @classmethod
    def not_supported(cls, what: str) -> RegistryError:
        return cls(501, 50101, f"{what} is not supported by odradek's schema registry")
