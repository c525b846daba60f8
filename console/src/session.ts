/**
 * The sign-in token lives in this tab's sessionStorage only: never in a URL, a cookie or
 * localStorage, and sign-out removes it. Closing the tab forgets it.
 */
const KEY = 'spendgate.token';

export const session = {
  token: (): string | null => sessionStorage.getItem(KEY),
  keep: (token: string): void => sessionStorage.setItem(KEY, token),
  clear: (): void => sessionStorage.removeItem(KEY),
};
