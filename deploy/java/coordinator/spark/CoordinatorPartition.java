package coordinator.spark;

import org.apache.spark.sql.api.java.UDF2;

/**
 * Kafka's coordinator routing as a Spark SQL function: the partition of a group id or transactional
 * id is {@code Utils.abs(key.hashCode()) % partitions} (GroupCoordinatorService#partitionFor,
 * TransactionStateManager#partitionFor), a null key routing like "".
 *
 * <p>streaming/routing.py registers it as {@code coordinator_partition(key, partitions)}. It replaces
 * the same hash computed in SQL (hex of the key's UTF-16 units, a regex, conv and a lambda per unit),
 * which JFR found to be a fifth to two fifths of the JVM's samples in a burst (bench/jvm_profile.py).
 */
public final class CoordinatorPartition implements UDF2<String, Integer, Integer> {
    private static final long serialVersionUID = 1L;

    @Override
    public Integer call(String key, Integer partitions) {
        int hash = key == null ? 0 : key.hashCode();
        int abs = hash == Integer.MIN_VALUE ? 0 : Math.abs(hash); // Kafka's Utils.abs
        return abs % partitions;
    }
}
