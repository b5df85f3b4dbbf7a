package coordinator.hadoop;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system ("file:") without a process per call.
 *
 * <p>Without Hadoop's native library, RawLocalFileSystem runs {@code chmod} in a new process for
 * every file it creates with a permission, and the streaming checkpoint creates several files per
 * micro-batch (offsets, commits, state-store changelogs). This class sets the same POSIX
 * permissions through java.nio instead. Everything else is Hadoop's own code, checksums included.
 * Used through {@code spark.hadoop.fs.file.impl}.
 */
public class NoForkLocalFileSystem extends LocalFileSystem {
    public NoForkLocalFileSystem() {
        super(new Raw());
    }

    /** The raw file system underneath the checksums. */
    public static class Raw extends RawLocalFileSystem {
        @Override
        public void setPermission(Path p, FsPermission permission) throws IOException {
            File file = pathToFile(p);
            try {
                Files.setPosixFilePermissions(file.toPath(), posix(permission));
            } catch (UnsupportedOperationException e) {
                super.setPermission(p, permission);  // not a POSIX file system: Hadoop's way
            }
        }

        static Set<PosixFilePermission> posix(FsPermission permission) {
            Set<PosixFilePermission> out = EnumSet.noneOf(PosixFilePermission.class);
            add(out, permission.getUserAction(), PosixFilePermission.OWNER_READ,
                PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE);
            add(out, permission.getGroupAction(), PosixFilePermission.GROUP_READ,
                PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE);
            add(out, permission.getOtherAction(), PosixFilePermission.OTHERS_READ,
                PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);
            return out;
        }

        private static void add(Set<PosixFilePermission> out, FsAction action, PosixFilePermission r,
                                PosixFilePermission w, PosixFilePermission x) {
            if (action.implies(FsAction.READ)) out.add(r);
            if (action.implies(FsAction.WRITE)) out.add(w);
            if (action.implies(FsAction.EXECUTE)) out.add(x);
        }
    }
}
