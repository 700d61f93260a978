/* rule_pages.c - each rule's page of docs/rules, inside the reports.
 *
 * A SARIF log is read in code scanning's view and an HTML report wherever it
 * was copied: a relative link to docs/rules/AC301.md is dead in both. So the
 * page's own text travels with them (embedded at build time, embed.cmake),
 * its links made absolute where --docs-url says where the pages are
 * published, and reduced to their text where nothing does. The rule's
 * description is the page's first paragraph after What and Fix.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "rule_pages.inc" /* rule_pages[] */

const char *ac_rule_page(const char *id) {
  for (size_t i = 0; i < sizeof rule_pages / sizeof rule_pages[0]; i++)
    if (strcmp(rule_pages[i].id, id) == 0) return rule_pages[i].text;
  return NULL;
}

/* target (relative to docs/rules/) resolved against base (docs/). */
static void add_resolved(FILE *t, const char *target, size_t n, const char *base) {
  fputs(base, t);
  if (base[0] && base[strlen(base) - 1] != '/') fputc('/', t);
  if (n >= 3 && strncmp(target, "../", 3) == 0)
    fwrite(target + 3, 1, n - 3, t);
  else
    fprintf(t, "rules/%.*s", (int)n, target);
}

/* What was written to a memory stream, or NULL when memory ran out. */
static char *finish(FILE *t, char **text) {
  if (fclose(t) != 0) {
    free(*text);
    return NULL;
  }
  return *text;
}

/* At p, a link [label](target): its parts; false if p starts none. */
static bool link_at(const char *p, const char **label, size_t *label_len, const char **target,
                    size_t *target_len, const char **end) {
  if (*p != '[') return false;
  const char *close = strpbrk(p + 1, "]\n");
  if (!close || *close != ']' || close[1] != '(') return false;
  const char *paren = strpbrk(close + 2, ")\n ");
  if (!paren || *paren != ')') return false;
  *label = p + 1;
  *label_len = (size_t)(close - p - 1);
  *target = close + 2;
  *target_len = (size_t)(paren - close - 2);
  *end = paren + 1;
  return true;
}

/* The page with each relative link resolved against base, or reduced to its
 * label when base is NULL (plain: bold marks dropped too); code is left as it is. */
static char *rewrite(const char *page, const char *base, bool plain) {
  char *text = NULL;
  size_t len = 0;
  FILE *t = open_memstream(&text, &len);
  if (!t) return NULL;
  bool fenced = false, code = false;
  for (const char *p = page; *p;) {
    const char *label, *target, *end;
    size_t label_len, target_len;
    if (strncmp(p, "```", 3) == 0 && (p == page || p[-1] == '\n')) { /* a code block */
      fenced = !fenced;
      fwrite(p, 1, 3, t);
      p += 3;
      continue;
    }
    if (!fenced && *p == '`') code = !code;
    if (!fenced && !code && link_at(p, &label, &label_len, &target, &target_len, &end) &&
        strncmp(target, "http", 4) != 0) {
      if (base && !plain) {
        fwrite(p, 1, (size_t)(target - p), t);
        add_resolved(t, target, target_len, base);
        fputc(')', t);
      } else {
        fwrite(label, 1, label_len, t);
      }
      p = end;
      continue;
    }
    if (plain && !fenced && !code && strncmp(p, "**", 2) == 0) {
      p += 2;
      continue;
    }
    fputc(*p++, t);
  }
  return finish(t, &text);
}

char *ac_rule_page_markdown(const char *id, const char *docs_url) {
  const char *page = ac_rule_page(id);
  return page ? rewrite(page, docs_url && *docs_url ? docs_url : NULL, false) : NULL;
}

char *ac_rule_page_text(const char *id) {
  const char *page = ac_rule_page(id);
  return page ? rewrite(page, NULL, true) : NULL;
}

/* The first paragraph that is prose: not the title, What or Fix. */
bool ac_rule_description(const char *id, char *buf, size_t len) {
  char *text = ac_rule_page_text(id);
  if (!text) return false;
  bool found = false;
  for (char *para = text, *next; para && *para && !found; para = next) {
    next = strstr(para, "\n\n");
    if (next) *next = 0, next += 2;
    while (*para == '\n')
      para++;
    if (!*para || *para == '#' || strncmp(para, "What:", 5) == 0 || strncmp(para, "Fix:", 4) == 0 ||
        strncmp(para, "```", 3) == 0)
      continue;
    size_t o = 0;
    for (const char *c = para; *c && o + 1 < len; c++) /* one line */
      buf[o++] = *c == '\n' ? ' ' : *c;
    buf[o] = 0;
    found = true;
  }
  free(text);
  return found;
}

char *ac_docs_link(const char *docs_url, const char *path) {
  if (!docs_url || !*docs_url) return NULL;
  char target[300], *text = NULL;
  size_t len = 0;
  FILE *t = open_memstream(&text, &len);
  if (!t) return NULL;
  snprintf(target, sizeof target, "../%s", path); /* from docs/rules/ up to docs/ */
  add_resolved(t, target, strlen(target), docs_url);
  return finish(t, &text);
}

char *ac_rule_page_url(const char *id, const char *docs_url) {
  char path[64];
  snprintf(path, sizeof path, "rules/%s.md", id);
  return ac_docs_link(docs_url, path);
}
