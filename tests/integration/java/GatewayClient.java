// Real Kafka Java clients (kafka-clients 4.1) for the gateway's end-to-end tests and benchmark.
// Compiled by the tests (tests/integration/java_client.py) against .cache/jars/kafka; every line it
// prints on stdout is one event, flushed at once, for the Python side to parse:
//
//   consume <bootstrap> <group> <topic> <classic|consumer> <member-name>
//       ASSIGNED <member> <p,p,...>            after every rebalance (the full assignment)
//       RECORD <member> <partition> <offset> <value>
//       COMMITTED <member> <partition>=<next offset>,...   after each synchronous commit
//       POLL-FAILED <member> <exception>       a poll failed because the member was fenced (it rejoins)
//   produce-txn <bootstrap> <transactional-id> <topic> <committed-count> <aborted-count>
//       COMMITTED <n> / ABORTED <n>             a transaction with n records committed / aborted
//   read-committed <bootstrap> <topic>
//       RECORD - <partition> <offset> <value>   every record a read_committed consumer delivers,
//       END <records>                           once it reached the last stable offset of every partition
//   authz <bootstrap> <prefix> <user> <classic|consumer> <topic>
//       RESULT <step> OK|<exception class>[: <detail>]   one line per step: what a client of `user`
//       may do with the coordinator APIs (the differential of tests/integration/test_gateway_sasl_e2e.py
//       runs it against the broker and against the gateway and compares the lines); see authz() below
//   authz-all <prefix> <label>=<settings file>,<bootstrap>,<user>,<classic|consumer>,<topic> ...
//       RESULT <label> <step> ...   authz of each, all at once in this JVM, each with its own settings
//
// -Dclient.config=<file.properties> adds its settings to every client (security.protocol, SASL, TLS).
import java.time.Duration;
import java.util.*;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class GatewayClient {
    static synchronized void out(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "consume" -> consume(args[1], args[2], args[3], args[4], args[5]);
            case "produce-txn" -> produceTxn(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]));
            case "read-committed" -> readCommitted(args[1], args[2]);
            case "authz" -> authz(args[1], args[2], args[3], args[4], args[5]);
            case "authz-all" -> authzAll(args[1], Arrays.copyOfRange(args, 2, args.length));
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    // authz-all: each probe's thread (and the threads it starts) has its own settings file and label.
    static final InheritableThreadLocal<String> PROBE_CONFIG = new InheritableThreadLocal<>();
    static final InheritableThreadLocal<String> PROBE_LABEL = new InheritableThreadLocal<>();

    /** The settings of -Dclient.config, or of the probe's own file (none without either). */
    static Properties base() {
        Properties p = new Properties();
        String file = PROBE_CONFIG.get() != null ? PROBE_CONFIG.get() : System.getProperty("client.config");
        if (file != null) {
            try (java.io.FileReader r = new java.io.FileReader(file)) {
                p.load(r);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        return p;
    }

    static Properties consumerProps(String bootstrap) {
        Properties p = base();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        return p;
    }

    static void consume(String bootstrap, String group, String topic, String protocol, String member) {
        Properties p = consumerProps(bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, member);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
        if (protocol.equals("classic")) {
            // A killed member is noticed by its session timeout (the others then rejoin).
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
        }
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.wakeup();
            try { main.join(10000); } catch (InterruptedException ignored) { }
        }));
        try {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> parts) { }
                public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                    out("ASSIGNED " + member + " " + consumer.assignment().stream().map(TopicPartition::partition)
                            .sorted().map(String::valueOf).collect(Collectors.joining(",")));
                }
                public void onPartitionsLost(Collection<TopicPartition> parts) { }
            });
            while (true) {
                ConsumerRecords<String, String> records;
                try {
                    records = consumer.poll(Duration.ofMillis(200));
                } catch (org.apache.kafka.common.errors.UnknownMemberIdException
                         | org.apache.kafka.common.errors.StaleMemberEpochException e) {
                    // A fenced member's OffsetFetch fails this way; the consumer rejoins on its own.
                    out("POLL-FAILED " + member + " " + e.getClass().getSimpleName());
                    continue;
                }
                if (records.isEmpty()) continue;
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    out("RECORD " + member + " " + r.partition() + " " + r.offset() + " " + r.value());
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                try {
                    consumer.commitSync(offsets);
                    out("COMMITTED " + member + " " + offsets.entrySet().stream()
                            .map(e -> e.getKey().partition() + "=" + e.getValue().offset()).sorted()
                            .collect(Collectors.joining(",")));
                } catch (CommitFailedException | org.apache.kafka.common.errors.RebalanceInProgressException e) {
                    out("COMMIT-FAILED " + member + " " + e.getClass().getSimpleName());
                }
            }
        } catch (WakeupException e) {
            // shutting down
        } finally {
            consumer.close(CloseOptions.timeout(Duration.ofSeconds(5)));
        }
    }

    static Properties producerProps(String bootstrap, String tid) {
        Properties p = base();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tid);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        return p;
    }

    static void produceTxn(String bootstrap, String tid, String topic, int committed, int aborted) {
        Properties p = producerProps(bootstrap, tid);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < committed; i++) producer.send(new ProducerRecord<>(topic, "k" + i, "committed-" + i));
            producer.commitTransaction();
            out("COMMITTED " + committed);
            producer.beginTransaction();
            for (int i = 0; i < aborted; i++) producer.send(new ProducerRecord<>(topic, "k" + i, "aborted-" + i));
            producer.flush();  // the records are in the log before the abort
            producer.abortTransaction();
            out("ABORTED " + aborted);
        }
    }

    static void readCommitted(String bootstrap, String topic) {
        Properties p = consumerProps(bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> parts = consumer.partitionsFor(topic).stream()
                    .map(i -> new TopicPartition(topic, i.partition())).collect(Collectors.toList());
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            Map<TopicPartition, Long> end = consumer.endOffsets(parts);  // read_committed: the LSO
            int n = 0;
            long deadline = System.currentTimeMillis() + 60000;
            while (parts.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException("did not reach " + end);
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    out("RECORD - " + r.partition() + " " + r.offset() + " " + r.value());
                    n++;
                }
            }
            out("END " + n);
        }
    }
    // ------------------------------------------------------------------ authorisation probe
    // The names (the test grants `user` these ACLs, on the broker, and creates the hidden ones as a
    // super user on both sides): `topic` (READ, WRITE, DESCRIBE) holding a record, topic
    // <prefix>-secret (none), groups <prefix>-group-<user>* (READ), transactional ids
    // <prefix>-tx-<user>* (WRITE); <prefix>-hidden-group and <prefix>-hidden-tx exist, without ACLs.
    interface Step { String run() throws Exception; }

    static void step(String name, Step step) {
        String outcome;
        try {
            outcome = step.run();
        } catch (Throwable e) {
            Throwable cause = e;
            while ((cause instanceof java.util.concurrent.ExecutionException || cause instanceof KafkaException)
                    && cause.getCause() != null && !(cause instanceof org.apache.kafka.common.errors.ApiException)) {
                cause = cause.getCause();
            }
            outcome = cause.getClass().getSimpleName() + ": " + cause.getMessage();
        }
        String label = PROBE_LABEL.get();
        out("RESULT " + (label == null ? "" : label + " ") + name + " " + outcome);
    }

    /** Runs each at once in a thread of its own (their requests share the service's micro-batches), and waits. */
    static void atOnce(Runnable... flows) throws InterruptedException {
        List<Thread> threads = new ArrayList<>();
        for (Runnable flow : flows) {
            Thread t = new Thread(flow);
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) t.join();
    }

    /** authz for several principals at once in this one JVM (one start instead of one per probe):
     *  each spec is label=config-file,bootstrap,user,protocol,topic; its lines say RESULT label step outcome. */
    static void authzAll(String prefix, String[] specs) throws InterruptedException {
        List<Runnable> probes = new ArrayList<>();
        for (String spec : specs) {
            String label = spec.substring(0, spec.indexOf('='));
            String[] a = spec.substring(spec.indexOf('=') + 1).split(",");
            probes.add(() -> {
                PROBE_LABEL.set(label);
                PROBE_CONFIG.set(a[0]);
                try {
                    authz(a[1], prefix, a[2], a[3], a[4]);
                } catch (Exception e) {
                    out("RESULT " + label + " probe-failed " + e);
                }
            });
        }
        atOnce(probes.toArray(new Runnable[0]));
    }

    static void authz(String bootstrap, String prefix, String user, String protocol, String topic) throws Exception {
        String secret = prefix + "-secret";
        String group = prefix + "-group-" + user, hiddenGroup = prefix + "-hidden-group";
        String tid = prefix + "-tx-" + user, hiddenTid = prefix + "-hidden-tx";
        Properties admin = base();
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        admin.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "180000");  // a loaded, shared test machine
        String jaas = admin.getProperty("sasl.jaas.config");
        try (Admin a = Admin.create(admin)) {
            // The steps are independent, but for the lists and the descriptions of its own group and
            // transaction, which come once the others made them.
            atOnce(
                // a consumer group the principal may read: it consumes and commits
                () -> step("group-consume-commit", () -> {
                    Properties p = consumerProps(bootstrap);
                    p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                    p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
                    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
                        c.subscribe(List.of(topic));
                        long deadline = System.currentTimeMillis() + 120000;
                        while (System.currentTimeMillis() < deadline) {
                            ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
                            if (!records.isEmpty()) {
                                c.commitSync();
                                TopicPartition tp = new TopicPartition(topic, 0);
                                long committed = c.committed(Set.of(tp)).get(tp).offset();
                                return committed == c.position(tp) ? "OK" : "committed " + committed + " at " + c.position(tp);
                            }
                        }
                        return "no record";
                    }
                }),
                // a group it may not read
                () -> step("group-denied", () -> {
                    Properties p = consumerProps(bootstrap);
                    p.put(ConsumerConfig.GROUP_ID_CONFIG, prefix + "-denied-group");
                    p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
                    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
                        c.subscribe(List.of(topic));
                        long deadline = System.currentTimeMillis() + 60000;
                        while (System.currentTimeMillis() < deadline) {
                            if (!c.poll(Duration.ofMillis(200)).isEmpty()) return "consumed";
                        }
                        return "no error";
                    }
                }),
                // a topic it may not read: its offsets may be neither committed nor fetched in its own group
                () -> {
                    Properties simple = consumerProps(bootstrap);
                    simple.put(ConsumerConfig.GROUP_ID_CONFIG, group + "-simple");
                    simple.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "180000");
                    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(simple)) {
                        TopicPartition tp = new TopicPartition(secret, 0);
                        step("topic-denied-commit", () -> {
                            c.commitSync(Map.of(tp, new OffsetAndMetadata(0)));
                            return "OK";
                        });
                        step("topic-denied-fetch-offsets", () -> "OK " + c.committed(Set.of(tp)));
                    }
                },
                // a transactional id it may write, and one it may not
                () -> step("txn-commit", () -> {
                    try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps(bootstrap, tid))) {
                        producer.initTransactions();
                        producer.beginTransaction();
                        producer.send(new ProducerRecord<>(topic, "k", "txn-" + user)).get();
                        producer.commitTransaction();
                        return "OK";
                    }
                }),
                () -> step("txn-denied", () -> {
                    Properties p = producerProps(bootstrap, prefix + "-denied-tx");
                    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                        producer.initTransactions();
                        return "OK";
                    }
                }),
                // a wrong password: refused as the broker refuses it
                () -> {
                    if (jaas == null) return;
                    Properties wrong = (Properties) admin.clone();
                    wrong.put("sasl.jaas.config", jaas.replaceAll("password=\"[^\"]*\"", "password=\"wrong\""));
                    step("wrong-password", () -> {
                        try (Admin w = Admin.create(wrong)) {
                            return "OK " + w.listTopics().names().get().contains(topic);
                        }
                    });
                },
                // what it may not describe
                () -> step("describe-hidden-group", () -> "OK " + a.describeConsumerGroups(List.of(hiddenGroup))
                        .describedGroups().get(hiddenGroup).get().groupState()),
                () -> step("offsets-hidden-group", () -> "OK " + a.listConsumerGroupOffsets(hiddenGroup)
                        .partitionsToOffsetAndMetadata().get()),
                () -> step("delete-hidden-group", () -> {
                    a.deleteConsumerGroups(List.of(hiddenGroup)).all().get();
                    return "OK";
                }),
                () -> step("describe-hidden-transaction", () -> "OK " + a.describeTransactions(List.of(hiddenTid))
                        .description(hiddenTid).get().state())
            );
            // listed and described: only what it may describe
            atOnce(
                () -> step("list-groups", () -> a.listGroups().all().get().stream().map(g -> g.groupId())
                        .filter(g -> g.startsWith(prefix)).sorted().collect(Collectors.joining(","))),
                () -> step("describe-own-group", () -> "OK " + a.describeConsumerGroups(List.of(group))
                        .describedGroups().get(group).get().groupId()),
                () -> step("list-transactions", () -> a.listTransactions().all().get().stream()
                        .map(t -> t.transactionalId()).filter(t -> t.startsWith(prefix)).sorted()
                        .collect(Collectors.joining(","))),
                () -> step("describe-own-transaction", () -> "OK " + a.describeTransactions(List.of(tid))
                        .description(tid).get().state())
            );
        }
    }
}
