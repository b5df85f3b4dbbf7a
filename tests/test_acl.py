"""coordinator/acl.py against Kafka's StandardAuthorizer rules; the cases follow 4.1.1's
StandardAuthorizerTest (names in the test names) and StandardAuthorizerData.findResult."""

from __future__ import annotations

from coordinator.acl import Acl, AclOperation, AclPermissionType, Authorizer, PatternType, ResourceType, acl_result

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
TOPIC, GROUP, TXN, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID, ResourceType.CLUSTER
Op = AclOperation


def acl(rtype, name, pattern, principal, op, permission=ALLOW, host="*") -> Acl:
    return Acl(rtype, name, pattern, principal, host, op, permission)


def test_find_result_implication():
    """ALLOW READ, WRITE, DELETE or ALTER implies DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS;
    a DENY implies nothing (testFindResultImplication)."""
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE):
        assert acl_result(acl(TOPIC, "t", LITERAL, "User:a", op), "User:a", "1.2.3.4", Op.DESCRIBE) == ALLOW
    for op in (Op.CREATE, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE):
        assert acl_result(acl(TOPIC, "t", LITERAL, "User:a", op), "User:a", "1.2.3.4", Op.DESCRIBE) is None
    assert acl_result(acl(TOPIC, "t", LITERAL, "User:a", Op.ALTER_CONFIGS), "User:a", "h", Op.DESCRIBE_CONFIGS) == ALLOW
    assert acl_result(acl(TOPIC, "t", LITERAL, "User:a", Op.READ, DENY), "User:a", "h", Op.DESCRIBE) is None
    assert acl_result(acl(TOPIC, "t", LITERAL, "User:a", Op.READ), "User:a", "h", Op.WRITE) is None
    assert acl_result(acl(TOPIC, "t", LITERAL, "User:a", Op.ALL, DENY), "User:a", "h", Op.DESCRIBE) == DENY


def test_find_result_principal_and_host_matching():
    assert acl_result(acl(GROUP, "g", LITERAL, "User:*", Op.READ), "User:b", "h", Op.READ) == ALLOW
    assert acl_result(acl(GROUP, "g", LITERAL, "User:a", Op.READ), "User:b", "h", Op.READ) is None
    assert (
        acl_result(acl(GROUP, "g", LITERAL, "User:a", Op.READ, host="10.0.0.1"), "User:a", "10.0.0.2", Op.READ) is None
    )
    assert (
        acl_result(acl(GROUP, "g", LITERAL, "User:a", Op.READ, host="10.0.0.1"), "User:a", "10.0.0.1", Op.READ) == ALLOW
    )


def test_find_result_cidr_hosts():
    """Kafka 4.4's CIDR hosts (CidrUtils.isInRange): a range matches the addresses in it, network
    and broadcast included; an address of the other family, or a host that is no CIDR, does not;
    a DENY on a range denies its addresses."""

    def result(acl_host, client, permission=ALLOW):
        return acl_result(
            acl(GROUP, "g", LITERAL, "User:a", Op.READ, permission, host=acl_host), "User:a", client, Op.READ
        )

    assert result("10.0.0.0/24", "10.0.0.17") == ALLOW
    assert result("10.0.0.0/24", "10.0.0.0") == ALLOW and result("10.0.0.0/24", "10.0.0.255") == ALLOW
    assert result("10.0.0.5/24", "10.0.0.200") == ALLOW  # host bits in the ACL are ignored, as SubnetUtils does
    assert result("10.0.0.0/24", "10.0.1.1") is None
    assert result("0.0.0.0/0", "192.168.1.1") == ALLOW
    assert result("10.0.0.0/24", "::1") is None and result("::/0", "10.0.0.1") is None
    assert result("2001:db8::/32", "2001:db8::7") == ALLOW and result("2001:db8::/32", "2001:db9::7") is None
    assert result("10.0.0.0/33", "10.0.0.1") is None and result("not/a-range", "10.0.0.1") is None
    assert result("10.0.0.0/8", "10.1.2.3", DENY) == DENY
    a = Authorizer(
        [
            acl(GROUP, "g", LITERAL, "User:a", Op.READ, host="10.0.0.0/8"),
            acl(GROUP, "g", LITERAL, "User:a", Op.READ, DENY, host="10.9.0.0/16"),
        ]
    )
    assert a.authorize("User:a", "10.1.1.1", Op.READ, GROUP, "g")
    assert not a.authorize("User:a", "10.9.1.1", Op.READ, GROUP, "g")
    assert not a.authorize("User:a", "11.0.0.1", Op.READ, GROUP, "g")


def test_simple_authorizations():
    authorizer = Authorizer(
        [
            acl(TOPIC, "foo", PREFIXED, "User:alice", Op.ALL),
            acl(TOPIC, "foobar", LITERAL, "User:bob", Op.ALL),
            acl(GROUP, "baz", LITERAL, "User:*", Op.READ),
        ]
    )
    assert authorizer.authorize("User:alice", "h", Op.READ, TOPIC, "foobaz")
    assert authorizer.authorize("User:bob", "h", Op.READ, TOPIC, "foobar")
    assert not authorizer.authorize("User:bob", "h", Op.READ, TOPIC, "foobaz")  # literal: not a prefix
    assert authorizer.authorize("User:anyone", "h", Op.READ, GROUP, "baz")
    assert not authorizer.authorize("User:anyone", "h", Op.DELETE, GROUP, "baz")
    assert not authorizer.authorize("User:alice", "h", Op.READ, TOPIC, "fo")


def test_deny_precedence_with_operation_all():
    """A DENY wins over any ALLOW, wherever either comes from (literal, prefixed, wildcard)."""
    authorizer = Authorizer(
        [
            acl(TOPIC, "*", LITERAL, "User:alice", Op.ALL),
            acl(TOPIC, "secret", PREFIXED, "User:alice", Op.ALL, DENY),
            acl(TOPIC, "secret-ok", LITERAL, "User:alice", Op.READ),
        ]
    )
    assert authorizer.authorize("User:alice", "h", Op.WRITE, TOPIC, "public")
    assert not authorizer.authorize("User:alice", "h", Op.READ, TOPIC, "secret-ok")
    assert not authorizer.authorize("User:alice", "h", Op.DESCRIBE, TOPIC, "secret-x")


def test_deny_for_read_does_not_deny_describe():
    authorizer = Authorizer(
        [acl(GROUP, "g", LITERAL, "User:a", Op.DESCRIBE), acl(GROUP, "g", LITERAL, "User:a", Op.READ, DENY)]
    )
    assert authorizer.authorize("User:a", "h", Op.DESCRIBE, GROUP, "g")
    assert not authorizer.authorize("User:a", "h", Op.READ, GROUP, "g")


def test_super_users_are_authorized_to_do_anything():
    authorizer = Authorizer([acl(GROUP, "g", LITERAL, "User:admin", Op.ALL, DENY)], super_users={"User:admin"})
    assert authorizer.authorize("User:admin", "h", Op.DELETE, GROUP, "g")
    assert authorizer.authorize("User:admin", "h", Op.IDEMPOTENT_WRITE, CLUSTER, "kafka-cluster")
    assert not authorizer.authorize("User:other", "h", Op.DESCRIBE, GROUP, "g")


def test_authorization_with_allow_everyone_if_no_acl_found():
    """The default applies only to a resource without any ACL, for anybody."""
    open_ = Authorizer([acl(TXN, "tx", LITERAL, "User:bob", Op.WRITE)], allow_everyone_if_no_acl_found=True)
    assert open_.authorize("User:alice", "h", Op.WRITE, TXN, "other")
    assert not open_.authorize("User:alice", "h", Op.WRITE, TXN, "tx")  # the resource has an ACL (bob's)
    closed = Authorizer([acl(TXN, "tx", LITERAL, "User:bob", Op.WRITE)])
    assert not closed.authorize("User:alice", "h", Op.WRITE, TXN, "other")
    assert closed.authorize("User:bob", "h", Op.DESCRIBE, TXN, "tx")  # WRITE implies DESCRIBE


def test_describe_filtering_keeps_what_the_principal_may_describe():
    authorizer = Authorizer([acl(GROUP, "team-a-", PREFIXED, "User:a", Op.READ)])
    names = ["team-a-1", "team-b-1", "team-a-2"]
    assert authorizer.filter_authorized("User:a", "h", Op.DESCRIBE, GROUP, names) == ["team-a-1", "team-a-2"]
    assert authorizer.filter_authorized("User:b", "h", Op.DESCRIBE, GROUP, names) == []


def test_the_index_answers_as_a_scan_of_every_acl():
    """The Authorizer finds a resource's ACLs through its literal and prefix indexes; every answer
    is the one a scan of all ACLs (StandardAuthorizerData's rules, written plainly) gives."""
    import random

    rnd = random.Random(7)
    names = ["", "a", "ab", "abc", "abd", "b", "*", "ab*", "x-1", "x-10"]
    principals = ["User:alice", "User:bob", "User:*"]
    ops = list(AclOperation)

    def scan(acls, allow_if_none, principal, host, op, rt, name):
        matching = [a for a in acls if a.matches_resource(rt, name)]
        results = [acl_result(a, principal, host, op) for a in matching]
        if AclPermissionType.DENY in results:
            return False
        if AclPermissionType.ALLOW in results:
            return True
        return allow_if_none and not matching

    for _ in range(300):
        acls = [
            Acl(
                rnd.choice([ResourceType.TOPIC, ResourceType.GROUP]),
                rnd.choice(names),
                rnd.choice(list(PatternType)),
                rnd.choice(principals),
                rnd.choice(["*", "10.0.0.1", "10.0.0.2"]),
                rnd.choice(ops),
                rnd.choice(list(AclPermissionType)),
            )
            for _ in range(rnd.randint(0, 8))
        ]
        allow_if_none = rnd.random() < 0.3
        authorizer = Authorizer(acls, (), allow_if_none)
        for _ in range(20):
            args = (
                rnd.choice(["User:alice", "User:bob"]),
                rnd.choice(["10.0.0.1", "10.0.0.2"]),
                rnd.choice(ops),
                rnd.choice([ResourceType.TOPIC, ResourceType.GROUP]),
                rnd.choice(names),
            )
            assert authorizer.authorize(*args) == scan(acls, allow_if_none, *args), (acls, args)
