/* exec/disk: the on-disk executable cache. One file per executable, named by
 * the hash of (plugin identity, StableHLO text); the file repeats both, so a
 * hash collision is a miss, and carries a checksum, so a
 * truncated or corrupt file is a miss that gets rewritten, never a crash.
 * Files are written to a temporary name and renamed: a reader never sees a
 * half-written entry. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/internal.h"

#define TPJ_DISK_MAGIC "TPJX"
#define TPJ_DISK_VERSION 1u

static int tpj_disk_mkdirs(const char* dir) {
  char path[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof(path)) return 0;
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; ++i) {
    if (path[i] == '/' || path[i] == '\0') {
      char c = path[i];
      path[i] = '\0';
      if (mkdir(path, 0755) != 0 && errno != EEXIST) return 0;
      path[i] = c;
    }
  }
  return 1;
}

/* 1 when entries can be written in dir (a directory where a file can be
 * created); else 0 with errno saying why. mkdir's EEXIST hides a file in
 * the directory's place, and a read-only or virtual (/proc) directory
 * exists but takes no files. */
static int tpj_disk_writable(const char* dir) {
  struct stat st;
  if (stat(dir, &st) != 0) return 0;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return 0;
  }
  char probe[4200];
  snprintf(probe, sizeof(probe), "%s/.probe.%ld", dir, (long)getpid());
  int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) {
    if (errno != EEXIST) return 0;
  } else {
    close(fd);
  }
  unlink(probe);
  return 1;
}

tpj_status_t tpj_exec_set_disk_cache(tpj_exec_t* ex, const char* dir, const char* identity) {
  pthread_mutex_lock(&ex->mu);
  free(ex->disk_dir);
  free(ex->disk_identity);
  ex->disk_dir = NULL;
  ex->disk_identity = NULL;
  tpj_status_t s = NULL;
  if (dir && dir[0]) {
    if (!tpj_disk_mkdirs(dir)) {
      s = tpj_status_make(TPJ_INVALID_ARGUMENT, "cannot create the cache directory %s: %s", dir,
                          strerror(errno));
    } else if (!tpj_disk_writable(dir)) {
      s = tpj_status_make(TPJ_INVALID_ARGUMENT, "cannot write in the cache directory %s: %s", dir,
                          strerror(errno));
    } else {
      ex->disk_dir = strdup(dir);
      ex->disk_identity = strdup(identity ? identity : "");
      if (!ex->disk_dir || !ex->disk_identity) s = tpj_status_make(TPJ_OUT_OF_MEMORY, "oom");
    }
  }
  pthread_mutex_unlock(&ex->mu);
  return s;
}

/* dir/<16 hex digits>.tpjx for this identity and program text. */
static void tpj_disk_path(const tpj_exec_t* ex, const tpj_strbuf_t* text, char* out, size_t cap) {
  uint64_t h = tpj_hash_bytes(ex->disk_identity, strlen(ex->disk_identity), TPJ_HASH_SEED);
  h = tpj_hash_bytes(text->data, text->len, h);
  snprintf(out, cap, "%s/%016llx.tpjx", ex->disk_dir, (unsigned long long)h);
}

static int tpj_disk_read_all(FILE* f, void* dst, size_t n) { return fread(dst, 1, n, f) == n; }

/* The stored key: identity, NUL, the program text. */
static int tpj_disk_key_matches(FILE* f, const tpj_exec_t* ex, const tpj_strbuf_t* text) {
  uint64_t len = 0;
  size_t idlen = strlen(ex->disk_identity);
  if (!tpj_disk_read_all(f, &len, sizeof(len)) || len != idlen + 1 + text->len) return 0;
  char* buf = (char*)malloc(len ? len : 1);
  if (!buf) return 0;
  int ok = tpj_disk_read_all(f, buf, len) && memcmp(buf, ex->disk_identity, idlen) == 0 &&
           buf[idlen] == '\0' && memcmp(buf + idlen + 1, text->data, text->len) == 0;
  free(buf);
  return ok;
}

/* Reads the payload of the entry at path for text: 1 and *out (malloc'd) on
 * success; 0 for another program's entry (a hash collision: only a miss); -1
 * for an unreadable, truncated or corrupt file. */
static int tpj_disk_read_entry(const tpj_exec_t* ex, const char* path, const tpj_strbuf_t* text,
                               char** out, uint64_t* out_len) {
  *out = NULL;
  FILE* f = fopen(path, "rb");
  if (!f) return 0;  /* not cached */
  char magic[4];
  uint32_t version = 0;
  uint64_t n = 0, sum = 0;
  int r = -1;
  if (tpj_disk_read_all(f, magic, 4) && memcmp(magic, TPJ_DISK_MAGIC, 4) == 0 &&
      tpj_disk_read_all(f, &version, sizeof(version)) && version == TPJ_DISK_VERSION) {
    if (!tpj_disk_key_matches(f, ex, text)) {
      r = 0;
    } else if (tpj_disk_read_all(f, &n, sizeof(n)) && n > 0 && n < ((uint64_t)1 << 40)) {
      char* p = (char*)malloc(n);
      if (p && tpj_disk_read_all(f, p, n) && tpj_disk_read_all(f, &sum, sizeof(sum)) &&
          sum == tpj_hash_bytes(p, n, TPJ_HASH_SEED)) {
        *out = p;
        *out_len = n;
        r = 1;
      } else {
        free(p);
      }
    }
  }
  fclose(f);
  return r;
}

int tpj_exec_disk_load_locked(tpj_exec_t* ex, const tpj_strbuf_t* text, tpj_rt_exe_t** out_exe) {
  *out_exe = NULL;
  if (!ex->disk_dir) return 0;
  char path[4200];
  tpj_disk_path(ex, text, path, sizeof(path));
  char* payload = NULL;
  uint64_t n = 0;
  int r = tpj_disk_read_entry(ex, path, text, &payload, &n);
  if (r == 1) {
    tpj_status_t s = tpj_rt_exe_deserialize(ex->rt, payload, n, out_exe);
    if (s) {
      tpj_status_free(s);
      r = -1;
    }
  }
  free(payload);
  if (r == 1) ex->m.cache_hits_disk++;
  if (r < 0) {
    if (ex->m.disk_errors++ == 0) {
      snprintf(ex->disk_error_path, sizeof(ex->disk_error_path), "%s", path);
      __atomic_store_n(&ex->disk_error_unreported, 1, __ATOMIC_RELEASE);
    }
  }
  return r == 1;
}

void tpj_exec_disk_store_locked(tpj_exec_t* ex, const tpj_strbuf_t* text, const tpj_rt_exe_t* exe) {
  if (!ex->disk_dir) return;
  char* bytes = NULL;
  size_t n = 0;
  tpj_status_t s = tpj_rt_exe_serialize(ex->rt, exe, &bytes, &n);
  if (s) {
    tpj_status_free(s);
    return;
  }
  char path[4200], tmp[4300];
  tpj_disk_path(ex, text, path, sizeof(path));
  snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
  FILE* f = fopen(tmp, "wb");
  int ok = f != NULL;
  if (ok) {
    uint32_t version = TPJ_DISK_VERSION;
    size_t idlen = strlen(ex->disk_identity);
    uint64_t klen = idlen + 1 + text->len, plen = n, sum = tpj_hash_bytes(bytes, n, TPJ_HASH_SEED);
    ok = fwrite(TPJ_DISK_MAGIC, 1, 4, f) == 4 && fwrite(&version, sizeof(version), 1, f) == 1 &&
         fwrite(&klen, sizeof(klen), 1, f) == 1 && fwrite(ex->disk_identity, 1, idlen + 1, f) ==
         idlen + 1 && fwrite(text->data, 1, text->len, f) == text->len &&
         fwrite(&plen, sizeof(plen), 1, f) == 1 && fwrite(bytes, 1, n, f) == n &&
         fwrite(&sum, sizeof(sum), 1, f) == 1;
    ok = (fclose(f) == 0) && ok;
  }
  if (ok) ok = rename(tmp, path) == 0;
  if (!ok) {
    unlink(tmp);
    ex->m.disk_errors++;
  } else {
    ex->m.disk_writes++;
  }
  free(bytes);
}

int tpj_exec_take_disk_error(tpj_exec_t* ex, char* out_path, size_t cap) {
  if (!__atomic_load_n(&ex->disk_error_unreported, __ATOMIC_ACQUIRE)) return 0;
  pthread_mutex_lock(&ex->mu);
  int had = ex->disk_error_unreported;
  ex->disk_error_unreported = 0;
  if (had && cap) snprintf(out_path, cap, "%s", ex->disk_error_path);
  pthread_mutex_unlock(&ex->mu);
  return had;
}
