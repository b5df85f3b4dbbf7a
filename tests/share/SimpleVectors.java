// Kafka 4.4.0's own SimpleAssignor on seeded random share groups: the answers
// tests/share/test_share_simple_assignor.py checks the service's assignor against
// (tests/share/simple_assignor_vectors.jsonl, after its first line). Member ids are random.
//   M=~/.m2/repository/org/apache/kafka
//   CP=$M/kafka-group-coordinator/4.4.0/kafka-group-coordinator-4.4.0.jar:$M/kafka-group-coordinator-api/4.4.0/kafka-group-coordinator-api-4.4.0.jar:$M/kafka-clients/4.4.0/kafka-clients-4.4.0.jar:$M/kafka-server-common/4.4.0/kafka-server-common-4.4.0.jar:<slf4j-api jar>
//   javac -d /tmp/sv -cp $CP tests/share/SimpleVectors.java && java -cp $CP:/tmp/sv SimpleVectors
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.*;
import org.apache.kafka.coordinator.group.assignor.SimpleAssignor;
import org.apache.kafka.coordinator.group.modern.*;

/** Kafka 4.4.0's SimpleAssignor on seeded random groups: JSON lines of inputs and answers. */
public class SimpleVectors {
    static String q(String s) { return "\"" + s + "\""; }

    public static void main(String[] args) {
        Random r = new Random(44);
        SimpleAssignor assignor = new SimpleAssignor();
        StringBuilder out = new StringBuilder();
        for (int c = 0; c < 60; c++) {
            int numTopics = 1 + r.nextInt(3);
            Map<String, Uuid> ids = new LinkedHashMap<>();
            Map<Uuid, String> names = new HashMap<>();
            Map<Uuid, Integer> counts = new HashMap<>();
            for (int t = 0; t < numTopics; t++) {
                Uuid id = new Uuid(r.nextLong(), r.nextLong());
                String name = "t" + t;
                ids.put(name, id); names.put(id, name); counts.put(id, 1 + r.nextInt(c % 3 == 0 ? 40 : 6));
            }
            boolean homogeneous = r.nextBoolean();
            int rounds = 1 + r.nextInt(5);
            Map<String, Set<Uuid>> subs = new LinkedHashMap<>();
            Map<String, Map<Uuid, Set<Integer>>> current = new LinkedHashMap<>();
            for (int round = 0; round < rounds; round++) {
                // members come and go
                int joins = 1 + r.nextInt(c % 4 == 0 ? 12 : 3);
                for (int j = 0; j < joins; j++) {
                    String m = Uuid.randomUuid().toString().substring(0, 8 + r.nextInt(12));
                    Set<Uuid> s = new LinkedHashSet<>();
                    for (Uuid id : ids.values()) if (homogeneous || r.nextInt(3) > 0) s.add(id);
                    subs.put(m, homogeneous ? new LinkedHashSet<>(ids.values()) : s);
                    current.put(m, new HashMap<>());
                }
                if (round > 0 && subs.size() > 1 && r.nextBoolean()) {
                    String gone = new ArrayList<>(subs.keySet()).get(r.nextInt(subs.size()));
                    subs.remove(gone); current.remove(gone);
                }
                Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
                for (String m : new TreeSet<>(subs.keySet()))  // ties in a bucket: id order, as the service
                    members.put(m, new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), subs.get(m), new Assignment(current.get(m))));
                GroupSpec spec = new GroupSpecImpl(members, homogeneous ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS, Map.of());
                SubscribedTopicDescriber d = new SubscribedTopicDescriber() {
                    public int numPartitions(Uuid id) { return counts.getOrDefault(id, -1); }
                    public Set<String> racksForPartition(Uuid id, int p) { return Set.of(); }
                };
                GroupAssignment result = assignor.assign(spec, d);
                out.append("{\"homogeneous\": ").append(homogeneous).append(", \"topics\": {");
                StringJoiner tj = new StringJoiner(", ");
                for (Map.Entry<String, Uuid> e : ids.entrySet()) tj.add(q(e.getKey()) + ": [" + q(e.getValue().toString()) + ", " + counts.get(e.getValue()) + "]");
                out.append(tj).append("}, \"members\": {");
                StringJoiner mj = new StringJoiner(", ");
                for (String m : subs.keySet()) {
                    StringJoiner sj = new StringJoiner(", ");
                    for (Uuid id : subs.get(m)) sj.add(q(names.get(id)));
                    mj.add(q(m) + ": [[" + sj + "], " + asJson(current.get(m), names) + "]");
                }
                out.append(mj).append("}, \"result\": {");
                StringJoiner rj = new StringJoiner(", ");
                for (String m : subs.keySet())
                    if (result.members().containsKey(m)) rj.add(q(m) + ": " + asJson(result.members().get(m).partitions(), names));
                out.append(rj).append("}}\n");
                for (String m : subs.keySet()) {
                    if (!result.members().containsKey(m)) { current.put(m, new HashMap<>()); continue; }
                    // As the service holds a target: topics by name, partitions ascending.
                    Map<Uuid, Set<Integer>> copy = new HashMap<>();
                    Map<String, Uuid> byName = new TreeMap<>();
                    result.members().get(m).partitions().keySet().forEach(k -> byName.put(names.get(k), k));
                    byName.values().forEach(k -> copy.put(k, new HashSet<>(new TreeSet<>(result.members().get(m).partitions().get(k)))));
                    current.put(m, copy);
                }
            }
        }
        System.out.print(out);
    }

    static String asJson(Map<Uuid, Set<Integer>> a, Map<Uuid, String> names) {
        StringJoiner j = new StringJoiner(", ", "{", "}");
        new TreeMap<String, Set<Integer>>() {{ a.forEach((k, v) -> put(names.get(k), v)); }}
            .forEach((k, v) -> j.add(q(k) + ": " + new TreeSet<>(v)));
        return j.toString();
    }
}
