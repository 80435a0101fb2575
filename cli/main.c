/* cli/main.c — placeholder until the command lands (issue 4). */
#include <stdio.h>
int main(void) { fprintf(stderr, "siglip2-embed: not built yet\n"); return 2; }
