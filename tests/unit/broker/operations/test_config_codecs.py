"""Golden bytes for the config APIs on each door (broker/codecs/{native,kafka}/configs.py,
harness in golden.py): a known request frame decodes to the operation's request model, and a
known result encodes to a known response frame. test_codecs.py checks every row has them.

Read against Kafka's schemas (clients/src/main/resources/common/message/): DescribeConfigs v1
is not flexible (int16 string lengths, int32 array lengths): resources (type int8, name, keys as
a nullable string array), include_synonyms; its answer is throttle, then per resource error
code, nullable message, type, name and entries (name, nullable value, read_only, source int8,
is_sensitive, synonyms of name, value, source). v4 is flexible (compact lengths + 1, tagged
fields), asks include_documentation and answers each entry's config_type (int8) and nullable
documentation. AlterConfigs v0 and IncrementalAlterConfigs v0 are not flexible (each config a
name and nullable value; the incremental one an int8 operation between them); AlterConfigs v2
and IncrementalAlterConfigs v1 are flexible; all answer throttle, then per resource error
code, nullable message, type and name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from broker.operations import alter_configs, describe_configs
from broker.operations import list_config_resources as lcr
from protocol.api import admin
from protocol.api.admin import (
    OP_DELETE,
    OP_SET,
    OP_SUBTRACT,
    SOURCE_DEFAULT_CONFIG,
    SOURCE_TOPIC_CONFIG,
    TYPE_LONG,
    ConfigEntry,
    ConfigSynonym,
)
from protocol.kafka import versions as v

from .golden import Case, check, kio, many
from .test_topic_codecs import nested

dc, ac = describe_configs, alter_configs

RETENTION = ConfigEntry("retention.ms", "5", False, False, SOURCE_TOPIC_CONFIG, TYPE_LONG, False,
                        [ConfigSynonym("retention.ms", "5", SOURCE_TOPIC_CONFIG),
                         ConfigSynonym("log.retention.ms", "9", SOURCE_DEFAULT_CONFIG)],
                        "how long")  # fmt: skip
DESCRIBED = dc.DescribeConfigsResult((
    dc.Described(2, "t", 0, None, (RETENTION,)),
    dc.Described(4, "1", 31, "no"),
))  # fmt: skip
DESCRIBE_ASKED = dc.DescribeConfigs((dc.ConfigResource(2, "t", ("retention.ms",)),
                                     dc.ConfigResource(4, "1", None)), True)  # fmt: skip
ALTERED = ac.AlterConfigsResult((ac.Altered(2, "t", 0), ac.Altered(4, "1", 42, "no")))
WHOLE = (ac.ConfigResource(2, "t", (ac.ConfigChange("retention.ms", "5"),
                                    ac.ConfigChange("flush.ms", None))),
         ac.ConfigResource(4, "1", ()))  # fmt: skip
WHOLE_OPS = (ac.ConfigResource(2, "t", (ac.ConfigChange("retention.ms", "5", OP_SET),
                                        ac.ConfigChange("flush.ms", None, OP_DELETE))),
             ac.ConfigResource(4, "1", ()))  # fmt: skip
OPS = (ac.ConfigResource(2, "t", (ac.ConfigChange("retention.ms", "5", OP_SET),
                                  ac.ConfigChange("flush.ms", None, OP_DELETE),
                                  ac.ConfigChange("cleanup.policy", "compact", OP_SUBTRACT))),
       ac.ConfigResource(4, "1", ()))  # fmt: skip


def describe_resources() -> Any:
    return many(
        nested("DescribeConfigsResource", resource_type=2, resource_name="t",
               configuration_keys=("retention.ms",)),
        nested("DescribeConfigsResource", resource_type=4, resource_name="1",
               configuration_keys=None),
    )  # fmt: skip


def alter_resources(incremental: bool) -> Any:
    given = [("retention.ms", OP_SET, "5"), ("flush.ms", OP_DELETE, None)]
    if incremental:
        given.append(("cleanup.policy", OP_SUBTRACT, "compact"))
    op = (lambda o: {"config_operation": o}) if incremental else (lambda o: {})
    configs = many(*(nested("AlterableConfig", name=n, value=val, **op(o)) for n, o, val in given))
    return many(
        nested("AlterConfigsResource", resource_type=2, resource_name="t", configs=configs),
        nested("AlterConfigsResource", resource_type=4, resource_name="1", configs=()),
    )  # fmt: skip


def native_alter(incremental: bool) -> Callable[[], Any]:
    return lambda: admin.AlterConfigsRequest([
        admin.AlterConfigsResource(2, "t", [admin.AlterableConfig("retention.ms", "5", OP_SET),
                                            admin.AlterableConfig("flush.ms", None, OP_DELETE)]),
        admin.AlterConfigsResource(4, "1", [])], False, incremental)  # fmt: skip


CASES = [
    Case("DescribeConfigs native", v.DESCRIBE_CONFIGS, -1,
         lambda: admin.DescribeConfigsRequest([
             admin.DescribeConfigsResource(2, "t", ["retention.ms"]),
             admin.DescribeConfigsResource(4, "1", None)], True, False),
         DESCRIBE_ASKED, DESCRIBED,
         "0000002195200007a16393929302a17491ac726574656e74696f6e2e6d739304a131c0c3c2",
         "0000005a93070091929500c002a1749199ac726574656e74696f6e2e6d73a135c2c20105c29293ac726574656e74696f6e2e6d73a1350193b06c6f672e726574656e74696f6e2e6d73a13905a8686f77206c6f6e67951fa26e6f04a13190"),
    Case("DescribeConfigs v1", v.DESCRIBE_CONFIGS, 1,
         kio(v.DESCRIBE_CONFIGS, 1, resources=describe_resources(), include_synonyms=True),
         DESCRIBE_ASKED, DESCRIBED,
         "00000034002000010000000700076f64726164656b000000020200017400000001000c726574656e74696f6e2e6d7304000131ffffffff01",
         "000000660000000700000000000000020000ffff0200017400000001000c726574656e74696f6e2e6d7300013500010000000002000c726574656e74696f6e2e6d730001350100106c6f672e726574656e74696f6e2e6d7300013905001f00026e6f0400013100000000"),
    Case("DescribeConfigs v4", v.DESCRIBE_CONFIGS, 4,
         kio(v.DESCRIBE_CONFIGS, 4, resources=describe_resources(), include_synonyms=True,
             include_documentation=True),
         dataclasses.replace(DESCRIBE_ASKED, include_documentation=True), DESCRIBED,
         "0000002d002000040000000700076f64726164656b0003020274020d726574656e74696f6e2e6d73000402310000010100",
         "0000006100000007000000000003000000020274020d726574656e74696f6e2e6d730235000100030d726574656e74696f6e2e6d7302350100116c6f672e726574656e74696f6e2e6d73023905000509686f77206c6f6e670000001f036e6f040231010000"),
    Case("AlterConfigs native", v.ALTER_CONFIGS, -1, native_alter(False),
         ac.AlterConfigs(WHOLE_OPS), ALTERED,
         "0000003195210007a16393929302a1749293ac726574656e74696f6e2e6d73a1350093a8666c7573682e6d73c0019304a13190c2c2",
         "0000001393070091929400c002a174942aa26e6f04a131"),
    Case("AlterConfigs native, incremental", v.ALTER_CONFIGS, -1, native_alter(True),
         ac.AlterConfigs(WHOLE_OPS, incremental=True), ALTERED,
         "0000003195210007a16393929302a1749293ac726574656e74696f6e2e6d73a1350093a8666c7573682e6d73c0019304a13190c2c3",
         "0000001393070091929400c002a174942aa26e6f04a131"),
    Case("AlterConfigs v0", v.ALTER_CONFIGS, 0,
         kio(v.ALTER_CONFIGS, 0, resources=alter_resources(False), validate_only=False),
         ac.AlterConfigs(WHOLE), ALTERED,
         "00000043002100000000000700076f64726164656b000000020200017400000002000c726574656e74696f6e2e6d730001350008666c7573682e6d73ffff040001310000000000",
         "0000001e0000000700000000000000020000ffff02000174002a00026e6f04000131"),
    Case("AlterConfigs v2", v.ALTER_CONFIGS, 2,
         kio(v.ALTER_CONFIGS, 2, resources=alter_resources(False), validate_only=True),
         ac.AlterConfigs(WHOLE, validate_only=True), ALTERED,
         "0000003a002100020000000700076f64726164656b0003020274030d726574656e74696f6e2e6d7302350009666c7573682e6d7300000004023101000100",
         "0000001b0000000700000000000300000002027400002a036e6f0402310000"),
    Case("IncrementalAlterConfigs v0", v.INCREMENTAL_ALTER_CONFIGS, 0,
         kio(v.INCREMENTAL_ALTER_CONFIGS, 0, resources=alter_resources(True),
             validate_only=False),
         ac.AlterConfigs(OPS, incremental=True), ALTERED,
         "0000005f002c00000000000700076f64726164656b000000020200017400000003000c726574656e74696f6e2e6d73000001350008666c7573682e6d7301ffff000e636c65616e75702e706f6c696379030007636f6d70616374040001310000000000",
         "0000001e0000000700000000000000020000ffff02000174002a00026e6f04000131"),
    Case("IncrementalAlterConfigs v1", v.INCREMENTAL_ALTER_CONFIGS, 1,
         kio(v.INCREMENTAL_ALTER_CONFIGS, 1, resources=alter_resources(True),
             validate_only=True),
         ac.AlterConfigs(OPS, validate_only=True, incremental=True), ALTERED,
         "00000055002c00010000000700076f64726164656b0003020274040d726574656e74696f6e2e6d730002350009666c7573682e6d730100000f636c65616e75702e706f6c6963790308636f6d70616374000004023101000100",
         "0000001b0000000700000000000300000002027400002a036e6f0402310000"),
    Case("ListConfigResources v0", v.LIST_CONFIG_RESOURCES, 0, kio(v.LIST_CONFIG_RESOURCES, 0),
         lcr.ListConfigResources(client_metrics_only=True), lcr.ListConfigResourcesResult(0),
         "00000013004a00000000000700076f64726164656b0000",
         "0000000d00000007000000000000000100"),
    Case("ListConfigResources v1", v.LIST_CONFIG_RESOURCES, 1,
         kio(v.LIST_CONFIG_RESOURCES, 1, resource_types=(2, 4)),
         lcr.ListConfigResources((2, 4)),
         lcr.ListConfigResourcesResult(0, (("1", 4), ("t", 2))),
         "00000016004a00010000000700076f64726164656b0003020400",
         "00000015000000070000000000000003023104000274020000"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)
