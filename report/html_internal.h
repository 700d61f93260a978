/* html_internal.h - what the HTML report's files share (html.c: the page,
 * its header, summary and data; html_finding.c: one finding). Private to
 * report/. */
#ifndef AC_HTML_INTERNAL_H
#define AC_HTML_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "report.h"

#define MAX_FRAMES 16 /* frames of one stack */

/* A growing text; ok turns false for good when memory runs out. */
struct page {
  char *text;
  size_t len, cap;
  bool ok;
  const char *docs_url; /* --docs-url: where the rule pages are published, or "" */
};

void html_put_n(struct page *p, const char *s, size_t n);
void html_put(struct page *p, const char *s);
void __attribute__((format(printf, 2, 3))) html_putf(struct page *p, const char *fmt, ...);
/* Text as HTML: the five characters that mean something escaped. */
void html_esc(struct page *p, const char *s);
const char *html_str(const json_t *o, const char *key);
long long html_num(const json_t *o, const char *key);
bool html_is_suppressed(const json_t *f);

/* html_finding.c: finding number index (0-based) of the page, in full. */
void html_finding(struct page *p, const json_t *f, size_t index);

#endif
