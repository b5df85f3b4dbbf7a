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
import java.time.Duration;
import java.util.*;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
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
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static Properties consumerProps(String bootstrap) {
        Properties p = new Properties();
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

    static void produceTxn(String bootstrap, String tid, String topic, int committed, int aborted) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tid);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
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
}
