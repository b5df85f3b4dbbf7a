// Kafka's own bytes for the gateway codec's golden tests (tests/gateway/golden/make_golden.py runs it).
//
//   java -cp <kafka-clients and jackson jars> GoldenBytes.java cases.json golden.json
//
// Each case names a message ("OffsetCommitRequest", "RequestHeader", ...), a version and a body in
// Kafka's JSON form. The body is read with Kafka's generated JSON converter, written with the
// generated message class (the bytes a Kafka client or broker sends), and printed again by the
// converter (how Kafka's JSON reads those values).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

public class GoldenBytes {
    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        JsonNode cases = mapper.readTree(new File(args[0]));
        ArrayNode out = mapper.createArrayNode();
        for (JsonNode c : cases) {
            String name = c.get("message").asText();
            short version = (short) c.get("version").asInt();
            String pkg = "org.apache.kafka.common.message.";
            Class<?> data = Class.forName(pkg + name + "Data");
            Class<?> converter = Class.forName(pkg + name + "DataJsonConverter");
            Method read = converter.getMethod("read", JsonNode.class, short.class);
            Method write = converter.getMethod("write", data, short.class);
            Message message = (Message) read.invoke(null, c.get("json"), version);
            ObjectSerializationCache cache = new ObjectSerializationCache();
            ByteBuffer buf = ByteBuffer.allocate(message.size(cache, version));
            message.write(new ByteBufferAccessor(buf), cache, version);
            StringBuilder hex = new StringBuilder();
            for (byte b : buf.array()) hex.append(String.format("%02x", b));
            ObjectNode result = mapper.createObjectNode();
            result.put("message", name);
            result.put("version", version);
            result.set("json", c.get("json"));
            result.put("hex", hex.toString());
            result.set("kafkaJson", (JsonNode) write.invoke(null, message, version));
            out.add(result);
        }
        mapper.writeValue(new File(args[1]), out);
    }
}
