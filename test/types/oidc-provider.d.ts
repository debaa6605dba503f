// oidc-provider ships no type declarations; test/oidc-standin.ts is its only user.
declare module 'oidc-provider';
